/** Versions of the example template for journeys that create and migrate projects. */
import { cp, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { tempDir } from './fixtures.js';

export const example = path.resolve('examples/templates/node-service');

/** Version 1.2.0 of the example: a new file, and a migration step that brings it to 1.1.0 projects. */
export async function nextVersion(breaking = false): Promise<string> {
  const dir = await tempDir('tr-next-');
  await cp(example, dir, { recursive: true });
  await writeFile(path.join(dir, 'template', '.editorconfig'), 'root = true\n\n[*]\nindent_style = space\nindent_size = 2\n');
  const changelog = await readFile(path.join(dir, 'CHANGELOG.md'), 'utf8');
  await writeFile(path.join(dir, 'CHANGELOG.md'), changelog.replace(/^## \[/m, '## [1.2.0] - 2026-11-22\n\n### Added\n\n- .editorconfig\n\n## ['));
  await mkdir(path.join(dir, 'migrations'), { recursive: true });
  await writeFile(
    path.join(dir, 'migrations', '1.1.0-to-1.2.0.json'),
    JSON.stringify(
      {
        id: 'add-editorconfig',
        description: 'Add an .editorconfig and mention it in the README',
        fromVersion: '1.1.0',
        toVersion: '1.2.0',
        breaking,
        automatic: !breaking,
        changes: [
          { type: 'create', path: '.editorconfig', content: 'root = true\n\n[*]\nindent_style = space\nindent_size = 2\n' },
          { type: 'update', path: '.env.example', content: '# {{ projectName }} settings\nPORT=3000\n', backup: true },
        ],
      },
      null,
      2,
    ),
  );
  return dir;
}

