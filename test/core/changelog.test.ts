import { describe, expect, it } from 'vitest';

import {
  ChangelogSectionMissingError,
  extractChangelogSection,
  findChangelogSection,
  requireChangelogSection,
} from '../../src/core/changelog.js';

const keepAChangelog = `# Changelog

All notable changes to this project will be documented in this file.

## [Unreleased]

- Work in progress.

## [1.2.0] - 2026-01-31

### Added

- A \`--force\` flag.

### Fixed

- Paths with spaces.

## [1.1.0] - 2025-12-01

### Changed

- Faster generation.

## [1.0.0] - 2025-11-01

- First release.

[unreleased]: https://github.com/acme/t/compare/v1.2.0...HEAD
[1.2.0]: https://github.com/acme/t/compare/v1.1.0...v1.2.0
[1.1.0]: https://github.com/acme/t/compare/v1.0.0...v1.1.0
[1.0.0]: https://github.com/acme/t/releases/tag/v1.0.0
`;

const withHeading = (heading: string): string => `# Changelog\n\n${heading}\n\n- The notes.\n\n## 1.1.0\n\n- Older notes.\n`;

describe('extractChangelogSection', () => {
  it.each([
    '## 1.2.0',
    '## [1.2.0]',
    '## [1.2.0] - 2026-01-31',
    '## v1.2.0',
    '## [v1.2.0](https://github.com/acme/t/compare/v1.1.0...v1.2.0) (2026-01-31)',
    '## 1.2.0 (2026-01-31)',
    '## 1.2.0 - 2026-01-31',
    '## [ 1.2.0 ]',
    '  ## 1.2.0',
    '## 1.2.0 ##',
  ])('finds the section under %j', (heading) => {
    expect(extractChangelogSection(withHeading(heading), '1.2.0')).toBe('- The notes.');
  });

  it('accepts the version with or without a leading v', () => {
    expect(extractChangelogSection(withHeading('## [1.2.0]'), 'v1.2.0')).toBe('- The notes.');
    expect(extractChangelogSection(withHeading('## v1.2.0'), 'v1.2.0')).toBe('- The notes.');
  });

  it('includes ### subsections and stops at the next ## heading', () => {
    expect(extractChangelogSection(keepAChangelog, '1.2.0')).toBe(
      '### Added\n\n- A `--force` flag.\n\n### Fixed\n\n- Paths with spaces.',
    );
  });

  it('stops at a level-1 heading too', () => {
    expect(extractChangelogSection('## 1.2.0\n\nNotes.\n\n# Appendix\n\nNot notes.\n', '1.2.0')).toBe('Notes.');
  });

  it('runs to the end of the file for the last section, without the version link definitions', () => {
    expect(extractChangelogSection(keepAChangelog, '1.0.0')).toBe('- First release.');
  });

  it('keeps other link reference definitions of the section', () => {
    const text = '## 1.0.0\n\nSee [the docs][docs].\n\n[docs]: https://example.com/docs\n';
    expect(extractChangelogSection(text, '1.0.0')).toBe('See [the docs][docs].\n\n[docs]: https://example.com/docs');
  });

  it('returns undefined for a version without a heading', () => {
    expect(extractChangelogSection(keepAChangelog, '1.3.0')).toBeUndefined();
    expect(extractChangelogSection('', '1.0.0')).toBeUndefined();
  });

  it.each(['## 1.2.01', '## 11.2.0', '## [11.2.0]', '## [1.2.01]', '## 1.2.0-beta.1', '## [1.2.0-beta.1]', '## 1.2.0.1', '## v11.2.0', '### 1.2.0', '# 1.2.0', '##1.2.0', '- ## 1.2.0'])(
    'does not take %j for 1.2.0',
    (heading) => {
      expect(extractChangelogSection(withHeading(heading), '1.2.0')).toBeUndefined();
    },
  );

  it('does not read a regex out of the version', () => {
    expect(extractChangelogSection(withHeading('## 1x2y0'), '1.2.0')).toBeUndefined();
  });

  it('returns an empty string for an empty section', () => {
    expect(extractChangelogSection('## [1.2.0] - 2026-01-31\n\n\n## [1.1.0]\n\n- Older.\n', '1.2.0')).toBe('');
    expect(extractChangelogSection('## [1.2.0]', '1.2.0')).toBe('');
  });

  it('takes the first section when a version appears twice', () => {
    expect(extractChangelogSection('## 1.2.0\n\nFirst.\n\n## 1.2.0\n\nSecond.\n', '1.2.0')).toBe('First.');
  });

  it('ignores headings inside fenced code blocks', () => {
    const text = [
      '## 1.2.0',
      '',
      'Run:',
      '',
      '```sh',
      '# install',
      '## 1.1.0 (not a heading)',
      'npm i',
      '```',
      '',
      '~~~',
      '# also code',
      '~~~',
      '',
      'Done.',
      '',
      '## 1.1.0',
      '',
      '```',
      '## 1.0.0',
      '```',
    ].join('\n');
    expect(extractChangelogSection(text, '1.2.0')).toBe(
      'Run:\n\n```sh\n# install\n## 1.1.0 (not a heading)\nnpm i\n```\n\n~~~\n# also code\n~~~\n\nDone.',
    );
    expect(extractChangelogSection(text, '1.0.0')).toBeUndefined();
  });

  it('handles CRLF line endings', () => {
    expect(extractChangelogSection('## 1.2.0\r\n\r\n- One.\r\n- Two.\r\n\r\n## 1.1.0\r\n', '1.2.0')).toBe('- One.\n- Two.');
  });

  it('tells where the heading is', () => {
    expect(findChangelogSection(keepAChangelog, '1.2.0')).toMatchObject({ line: 9, heading: '## [1.2.0] - 2026-01-31' });
  });
});

describe('requireChangelogSection', () => {
  it('returns the section', () => {
    expect(requireChangelogSection(keepAChangelog, '1.1.0')).toBe('### Changed\n\n- Faster generation.');
  });

  it('throws ChangelogSectionMissingError for a missing or empty section', () => {
    expect(() => requireChangelogSection(keepAChangelog, 'v2.0.0', 'CHANGELOG.md')).toThrow(ChangelogSectionMissingError);
    expect(() => requireChangelogSection(keepAChangelog, 'v2.0.0', 'CHANGELOG.md')).toThrow(
      'CHANGELOG.md has no section for version 2.0.0 (add a heading such as "## [2.0.0] - YYYY-MM-DD")',
    );
    let error: unknown;
    try {
      requireChangelogSection('## 1.2.0\n\n## 1.1.0\n\n- x\n', '1.2.0');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ChangelogSectionMissingError);
    expect(error).toMatchObject({ version: '1.2.0', empty: true, message: expect.stringMatching(/section for version 1\.2\.0 is empty/) });
  });
});
