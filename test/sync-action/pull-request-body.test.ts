/**
 * The sync action's pull request shows the template's change log, guide and step texts without
 * letting them act on the reader: no raw HTML, no @-mentions, no images, links kept as text, code
 * left as written.
 */
import { describe, expect, it } from 'vitest';

import { pullRequestBody, type PullRequestBodyInput } from '../../src/sync-action/body.js';
import { safeMarkdown } from '../../src/sync-action/safe-markdown.js';

const ZWSP = '&#8203;';

function body(changes: Partial<PullRequestBodyInput> = {}): string {
  return pullRequestBody({
    templateId: 'node-service',
    fromVersion: '1.0.0',
    toVersion: '1.1.0',
    projectPath: '',
    branch: 'template-update/node-service-1.1.0',
    breaking: false,
    breakingReasons: [],
    files: [],
    stepsApplied: [],
    warnings: [],
    conflicts: [],
    changelog: [],
    ...changes,
  });
}

/** The changelog section of a body. */
const changelogOf = (text: string): string => text.slice(text.indexOf('### Changelog'), text.indexOf('\n---\n'));

describe('the pull request body', () => {
  it('escapes raw HTML in the changelog: no tag, comment or entity reaches GitHub as HTML', () => {
    const text = changelogOf(
      body({
        changelog: [{ version: '1.1.0', body: '- Fixed <img src=x onerror=alert(1)>\n<details><summary>more</summary>hidden</details>\n<!-- hidden -->\nR&D &#64;admin\n<https://evil.example/>' }],
      }),
    );
    expect(text).not.toMatch(/<(img|details|summary|!--|https)/);
    expect(text).toContain('- Fixed &lt;img src=x onerror=alert(1)>');
    expect(text).toContain('&lt;!-- hidden -->');
    expect(text).toContain('R&amp;D &amp;#64;admin');
  });

  it('notifies nobody: @-mentions of people and teams are broken', () => {
    const text = changelogOf(body({ changelog: [{ version: '1.1.0', body: 'Thanks @octocat and @acme/security-team!\ncc @ghost' }] }));
    expect(text).not.toMatch(/@[A-Za-z0-9]/);
    expect(text).toContain(`Thanks @${ZWSP}octocat and @${ZWSP}acme/security-team!`);
    expect(text).toContain(`cc @${ZWSP}ghost`);
  });

  it('shows no image, and keeps links as text', () => {
    const text = changelogOf(
      body({
        changelog: [
          {
            version: '1.1.0',
            body: [
              '![tracker](https://evil.example/pixel.png)',
              '[![badge](https://img.example/b.svg)](https://ci.example/run)',
              'See [the docs](https://docs.example/upgrade "Upgrade") for details.',
              '![ref image][logo] and [a ref link][docs]',
              '',
              '[logo]: https://evil.example/logo.png',
              '[docs]: https://docs.example/',
            ].join('\n'),
          },
        ],
      }),
    );
    // No Markdown image or link syntax survives unescaped.
    expect(text).not.toMatch(/!\[|(?<!\\)\[[^\]]*\]\(/);
    expect(text).not.toMatch(/(?<!\\)\[[^\]\\]*(?<!\\)\]/);
    expect(text).toContain('tracker (https://evil.example/pixel.png)');
    expect(text).toContain('badge (https://img.example/b.svg) (https://ci.example/run)');
    expect(text).toContain('See the docs (https://docs.example/upgrade) for details.');
    expect(text).toContain('!\\[ref image\\]\\[logo\\] and \\[a ref link\\]\\[docs\\]');
    expect(text).toContain('\\[logo\\]: https://evil.example/logo.png');
  });

  it('leaves code spans and fenced code as written, and closes a fence the changelog left open', () => {
    const changelog = ['Use `<Button @click="go">` now.', '```html', '<div>@media [x](y)</div>', '```', '', '~~~', 'unclosed <b>'].join('\n');
    const text = body({ changelog: [{ version: '1.1.0', body: changelog }] });
    expect(text).toContain('Use `<Button @click="go">` now.');
    expect(text).toContain('```html\n<div>@media [x](y)</div>\n```');
    // The open fence ends before the body's own footer.
    expect(text).toContain('~~~\nunclosed <b>\n~~~\n\n---\n<sub>Opened by the template-registry sync action.');
  });

  it('escapes the migration guide, breaking reasons, warnings and file reasons too', () => {
    const text = body({
      breaking: true,
      breakingReasons: ['step <b>rename</b> by @octocat'],
      guide: { path: 'MIGRATION.md', firstLines: ['# Upgrade', '![x](https://evil.example/x.png) ask @admins'] },
      warnings: ['see [here](https://evil.example)'],
      files: [{ path: 'a.txt', status: 'merged', reason: '<script>' } as PullRequestBodyInput['files'][number]],
    });
    expect(text).toContain(`- step &lt;b>rename&lt;/b> by @${ZWSP}octocat`);
    expect(text).toContain(`> x (https://evil.example/x.png) ask @${ZWSP}admins`);
    expect(text).toContain('- see here (https://evil.example)');
    expect(text).toContain('- merged `a.txt`: &lt;script>');
  });

  it('keeps ordinary Markdown formatting', () => {
    expect(safeMarkdown('## Added\n\n- **bold** and _em_\n> quoted\n1. one')).toBe('## Added\n\n- **bold** and _em_\n> quoted\n1. one');
  });
});
