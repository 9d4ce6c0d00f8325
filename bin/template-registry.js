#!/usr/bin/env node
import { main } from '../build/lib/cli.js';

process.exitCode = await main(process.argv.slice(2));
