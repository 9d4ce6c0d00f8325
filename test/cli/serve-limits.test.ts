/**
 * `serve` sets the new limits from flags or environment variables
 * (`--body-timeout`/REGISTRY_BODY_TIMEOUT, `--max-connections-per-address`/REGISTRY_MAX_CONNECTIONS_PER_ADDRESS,
 * `--max-staged-files`/REGISTRY_MAX_STAGED_FILES, `--max-staged-bytes`/REGISTRY_MAX_STAGED_BYTES),
 * a flag before its variable, the documented defaults otherwise; a bad value is a usage error naming the flag.
 */
import { describe, expect, it } from 'vitest';

import { serveLimits } from '../../src/cli/commands/serve.js';
import { UsageError } from '../../src/cli/io.js';
import { DEFAULT_LIMITS } from '../../src/server/context.js';

describe('serve limit flags', () => {
  it('default to 60 s bodies, 64 connections per address, 10 staged files and 200 MiB per token', () => {
    expect(serveLimits({}, {})).toMatchObject({ bodyTimeoutMs: 60_000, maxConnectionsPerAddress: 64, maxStagedFilesPerToken: 10, maxStagedBytesPerToken: 200 * 1024 * 1024 });
    expect(serveLimits({}, {})).toMatchObject({ requestTimeoutMs: DEFAULT_LIMITS.requestTimeoutMs, readPerMinute: DEFAULT_LIMITS.readPerMinute });
  });

  it('take each flag before its environment variable; 0 connections means no limit', () => {
    const env = { REGISTRY_BODY_TIMEOUT: '5', REGISTRY_MAX_CONNECTIONS_PER_ADDRESS: '0', REGISTRY_MAX_STAGED_FILES: '4', REGISTRY_MAX_STAGED_BYTES: '1000' };
    expect(serveLimits({}, env)).toMatchObject({ bodyTimeoutMs: 5000, maxConnectionsPerAddress: 0, maxStagedFilesPerToken: 4, maxStagedBytesPerToken: 1000 });
    expect(serveLimits({ bodyTimeout: '7', maxConnectionsPerAddress: '8', maxStagedFiles: '9', maxStagedBytes: '10' }, env)).toMatchObject({
      bodyTimeoutMs: 7000,
      maxConnectionsPerAddress: 8,
      maxStagedFilesPerToken: 9,
      maxStagedBytesPerToken: 10,
    });
  });

  it('refuses a value that is not a whole number, naming the flag', () => {
    expect(() => serveLimits({ bodyTimeout: '0' }, {})).toThrow(UsageError);
    expect(() => serveLimits({ bodyTimeout: '0' }, {})).toThrow(/--body-timeout/);
    expect(() => serveLimits({ maxConnectionsPerAddress: '-1' }, {})).toThrow(/--max-connections-per-address/);
    expect(() => serveLimits({}, { REGISTRY_MAX_STAGED_FILES: 'many' })).toThrow(/--max-staged-files/);
    expect(() => serveLimits({ maxStagedBytes: '1.5' }, {})).toThrow(/--max-staged-bytes/);
  });
});
