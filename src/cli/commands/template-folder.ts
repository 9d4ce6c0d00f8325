import type { Command } from 'commander';

import { COMMAND_SUMMARIES } from './summaries.js';

/** The commands that work on one template folder, read once by `readTemplateTree`. */
export type TemplateFolderCommand = 'validate' | 'lint' | 'generate' | 'test' | 'pack';

/** `<name> [dir]`: a command on one template folder, the current one when none is given. */
export function templateFolderCommand(program: Command, name: TemplateFolderCommand): Command {
  return program.command(name).description(COMMAND_SUMMARIES[name].description).argument('[dir]', 'template folder', '.');
}
