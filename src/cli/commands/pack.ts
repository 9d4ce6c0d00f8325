import type { Command } from 'commander';

import { VERSION_PATTERN, VERSION_RULE } from '../../core/versions.js';
import { packTemplate, type LeftOutFile, type PackResult } from '../../pack/index.js';
import { readTemplateTree } from '../../template/tree.js';
import { EXIT, type CliIo } from '../io.js';
import { collect } from '../options.js';
import { templateFolderCommand } from './template-folder.js';
import { errorMessage } from '../../core/errors.js';

interface PackFlags {
  version?: string;
  outDir?: string;
  exclude: string[];
  json?: boolean;
}

function summary(result: PackResult): string {
  return [
    `${result.file}`,
    `  files:     ${result.files.length}`,
    `  size:      ${result.size} bytes`,
    `  sha256:    ${result.sha256}`,
    `  integrity: ${result.integrity}`,
    '',
  ].join('\n');
}

/** The lines naming what was left out of the archive and why: `left out: .env (an .env file; ...)`. */
function leftOutLines(leftOut: readonly LeftOutFile[]): string {
  return leftOut.map((file) => `left out: ${file.path} (${file.reason})\n`).join('');
}

/**
 * `template-registry pack [dir] [--version X] [--out-dir DIR] [--exclude GLOB]... [--json]`.
 * Exit 0 packed, 1 the template cannot be packed, 2 a usage error (bad `--version`, unknown flag).
 * Every file or folder left out is named on stderr with the reason (and in `--json`'s `leftOut`).
 *
 * The root program's own `--version` flag (commander's `.version()`) would otherwise swallow
 * `pack --version 1.2.3`, so this makes program options positional: they are recognised only
 * before the subcommand name (`template-registry --version` still prints the CLI version).
 */
export function registerPack(program: Command, io: CliIo, setExit: (code: number) => void): void {
  templateFolderCommand(program, 'pack')
    .option('--version <version>', 'version to stamp into the packed template.json (default: the manifest version)')
    .option('--out-dir <dir>', 'folder to write <name>-<version>.tgz into (default: the current folder, or the template folder\'s parent when run inside it)')
    .option('--exclude <glob>', 'also leave out paths matching this glob (repeatable)', collect, [])
    .option('--json', 'print the result as JSON')
    .action(async (dir: string, flags: PackFlags) => {
      if (flags.version !== undefined && !VERSION_PATTERN.test(flags.version)) {
        io.stderr(`error: --version ${VERSION_RULE} (got ${JSON.stringify(flags.version)})\n`);
        setExit(EXIT.usage);
        return;
      }
      let result: PackResult;
      try {
        result = await packTemplate(await readTemplateTree(dir), { version: flags.version, outDir: flags.outDir, exclude: flags.exclude });
      } catch (error) {
        io.stderr(`error: ${errorMessage(error)}\n`);
        setExit(EXIT.failure);
        return;
      }
      io.stderr(leftOutLines(result.leftOut));
      io.stdout(flags.json ? `${JSON.stringify(result, null, 2)}\n` : summary(result));
      setExit(EXIT.ok);
    });
}
