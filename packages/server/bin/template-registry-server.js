#!/usr/bin/env node
// The full template-registry CLI, server commands included (`template-registry` hands them to
// this package's lib/cli.js when both are installed; this bin runs it without the consumer package).
import { runCli } from '../lib/cli.js';

process.exitCode = await runCli(process.argv.slice(2));
