/**
 * Properties over generated inputs (fast-check): manifest validation, version order against the
 * semver package, the condition language, the list query parser, and the archive scanner on
 * generated tars.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';

import fc from 'fast-check';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

import { UnsafeArchiveError, scanArchive } from '../../src/archive/index.js';
import { describeSchemaErrors } from '../../src/core/messages.js';
import { schemaErrors } from '../../src/core/schemas.js';
import { compareVersions } from '../../src/core/versions.js';
import { parseListQuery, LIST_PARAMETERS } from '../helpers/list-query.js';
import { ExpressionError, ExpressionEvaluator } from '../../src/template/index.js';
import { tempDir, validManifest } from '../helpers/fixtures.js';
import { gzipTar, type TarEntry } from '../helpers/tar-builder.js';

const RUNS = { numRuns: 150 };

const version = fc.tuple(fc.nat(50), fc.nat(50), fc.nat(50)).map(([a, b, c]) => `${a}.${b}.${c}`);
const templateName = fc.stringMatching(/^[a-z][a-z0-9-]{2,30}$/);

const manifest = fc.record({
  name: templateName,
  version,
  description: fc.string({ minLength: 10, maxLength: 200 }).filter((text) => text.trim().length >= 10),
  category: fc.constantFrom('frontend', 'backend', 'fullstack', 'mobile', 'desktop'),
  stability: fc.constantFrom('stable', 'beta', 'experimental', 'deprecated'),
  author: fc.record({ name: fc.string({ minLength: 1, maxLength: 40 }).filter((n) => n.trim() !== '') }),
});

describe('manifest validation', () => {
  it('accepts generated manifests that follow the rules', () => {
    fc.assert(
      fc.property(manifest, (value) => {
        const errors = describeSchemaErrors(schemaErrors('template-manifest', { ...validManifest, ...value }));
        expect(errors).toEqual([]);
      }),
      RUNS,
    );
  });

  it('refuses a required field of the wrong type, naming that field', () => {
    const required = ['name', 'version', 'description', 'category'] as const;
    fc.assert(
      fc.property(manifest, fc.constantFrom(...required), fc.oneof(fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.nat(), { maxLength: 2 })), (value, field, wrong) => {
        const errors = describeSchemaErrors(schemaErrors('template-manifest', { ...validManifest, ...value, [field]: wrong }));
        expect(errors.some((error) => error.pointer === `/${field}`)).toBe(true);
      }),
      RUNS,
    );
  });
});

describe('compareVersions', () => {
  it('orders MAJOR.MINOR.PATCH versions as semver does', () => {
    fc.assert(
      fc.property(version, version, (a, b) => {
        expect(compareVersions(a, b)).toBe(semver.compare(a, b));
      }),
      { numRuns: 500 },
    );
  });

  it('compares any two strings as the spec\'s rule reads them: split on dots, each segment the number of its leading digits, a missing one 0', () => {
    const byRule = (a: string, b: string): number => {
      const value = (segment: string | undefined): number => Number(/^\d+/.exec(segment ?? '')?.[0] ?? 0);
      const left = a.split('.');
      const right = b.split('.');
      for (let i = 0; i < Math.max(left.length, right.length); i++) {
        const difference = value(left[i]) - value(right[i]);
        if (difference !== 0) return Math.sign(difference);
      }
      return 0;
    };
    const segment = fc.oneof(fc.nat(), fc.stringMatching(/^[0-9]{0,25}[a-z.-]{0,3}[0-9]{0,3}$/), fc.constant(''));
    const anyVersion = fc.oneof(fc.array(segment, { maxLength: 6 }).map((parts) => parts.join('.')), fc.string({ maxLength: 12 }));
    fc.assert(
      fc.property(anyVersion, anyVersion, (a, b) => {
        expect(compareVersions(a, b)).toBe(byRule(a, b));
      }),
      { numRuns: 2000 },
    );
    expect(compareVersions('1.2', '1.2.0.0')).toBe(0);
    expect(compareVersions('1.10.0', '1.9.0')).toBe(1);
    expect(compareVersions('2.0.0-beta', '2.0.0')).toBe(0);
    expect(compareVersions('12345678901234567890.0', '12345678901234567891.0')).toBe(0);
    expect(compareVersions('1.0.0', '1.0.1x')).toBe(-1);
  });

  it('is antisymmetric and reflexive', () => {
    fc.assert(
      fc.property(version, version, (a, b) => {
        expect(compareVersions(a, b) + compareVersions(b, a)).toBe(0);
        expect(compareVersions(a, a)).toBe(0);
      }),
      RUNS,
    );
  });
});

describe('the condition language', () => {
  const evaluator = new ExpressionEvaluator();

  it('never throws anything but ExpressionError on arbitrary text', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), (text) => {
        try {
          const result = evaluator.condition(text, { projectName: 'x', features: ['api'] });
          expect(typeof result).toBe('boolean');
        } catch (error) {
          expect(error).toBeInstanceOf(ExpressionError);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('agrees with a model on == and contains', () => {
    const word = fc.stringMatching(/^[a-z]{1,8}$/);
    fc.assert(
      fc.property(word, word, fc.array(word, { maxLength: 4 }), (value, other, list) => {
        expect(evaluator.condition(`name == "${other}"`, { name: value })).toBe(value === other);
        expect(evaluator.condition(`features contains "${other}"`, { features: list })).toBe(list.includes(other));
      }),
      RUNS,
    );
  });
});

describe('the list query parser', () => {
  it('either parses a query or names what it refuses; it never throws', () => {
    const key = fc.oneof(fc.constantFrom(...LIST_PARAMETERS, 'categroy', 'createdAt[gte]', 'downloads[lte]', 'filter', 'include'), fc.string({ maxLength: 12 }));
    const value = fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom('1', '0', '-1', '100', '101', 'name', '-downloads', 'name:asc', 'versions'), fc.array(fc.string({ maxLength: 5 }), { maxLength: 3 }));
    fc.assert(
      fc.property(fc.dictionary(key, value, { maxKeys: 5 }), (raw) => {
        const result = parseListQuery(raw);
        if (!result.ok) {
          expect(result.details.length).toBeGreaterThan(0);
          for (const detail of result.details) expect(typeof detail.field).toBe('string');
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('the archive scanner on generated tars', () => {
  const segment = fc.stringMatching(/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,11}$/).filter((s) => s !== '..' && s !== '.');
  const relativePath = fc.array(segment, { minLength: 1, maxLength: 4 }).map((parts) => parts.join('/'));

  it('accepts any set of safe paths and lists exactly those files', async () => {
    const dir = await tempDir('tr-prop-tar-');
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(relativePath, { minLength: 1, maxLength: 8 }), async (paths) => {
        // A path may not be both a file and a folder.
        const files = paths.filter((p) => !paths.some((other) => other.startsWith(`${p}/`)));
        const entries: TarEntry[] = files.map((p) => ({ path: `package/${p}`, body: p }));
        const file = path.join(dir, `${n++}.tgz`);
        await writeFile(file, gzipTar(entries));
        const scan = await scanArchive(file);
        expect(scan.files).toEqual([...files].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
      }),
      { numRuns: 60 },
    );
  });

  it('refuses any archive holding a path with .. or an absolute path', async () => {
    const dir = await tempDir('tr-prop-tar-');
    let n = 0;
    const hostile = fc.oneof(
      relativePath.map((p) => `package/../${p}`),
      relativePath.map((p) => `/${p}`),
      fc.tuple(relativePath, relativePath).map(([a, b]) => `package/${a}/../../${b}`),
    );
    await fc.assert(
      fc.asyncProperty(relativePath, hostile, async (safe, bad) => {
        const file = path.join(dir, `${n++}.tgz`);
        await writeFile(file, gzipTar([{ path: `package/${safe}`, body: 'x' }, { path: bad, body: 'x' }]));
        await expect(scanArchive(file)).rejects.toThrow(UnsafeArchiveError);
      }),
      { numRuns: 60 },
    );
  });
});
