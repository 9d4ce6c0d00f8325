import * as core from '@actions/core';

import { run } from './run.js';

await run({ env: process.env, core });
