import type { AnnotationProperties } from '@actions/core';

import type { ActionCore } from './run.js';

function where(properties?: AnnotationProperties): string {
  if (!properties?.file) return '';
  return `${properties.file}${properties.startLine ? `:${properties.startLine}` : ''}${properties.startColumn ? `:${properties.startColumn}` : ''}: `;
}

/**
 * The action's core for a terminal instead of a runner: log lines instead of workflow commands,
 * outputs and the summary collected in memory. `npm start` runs the action's pipeline with it.
 */
export function consoleCore(write: (line: string) => void = (line) => process.stdout.write(`${line}\n`)): ActionCore & {
  outputs: Record<string, string>;
  failed?: string;
} {
  const outputs: Record<string, string> = {};
  const rows: string[] = [];
  const core = {
    outputs,
    failed: undefined as string | undefined,
    setOutput: (name: string, value: string) => {
      outputs[name] = value;
    },
    setSecret: () => undefined,
    setFailed: (message: string) => {
      core.failed = message;
      write(`error: ${message}`);
    },
    info: (message: string) => write(message),
    warning: (message: string, properties?: AnnotationProperties) => write(`warning: ${where(properties)}${message}`),
    error: (message: string, properties?: AnnotationProperties) => write(`error: ${where(properties)}${message}`),
    startGroup: (name: string) => write(`-- ${name}`),
    endGroup: () => undefined,
    summary: {
      addHeading: (text: string) => rows.push(`== ${text}`),
      addTable: (table: (string | { data: string })[][]) => {
        for (const row of table) rows.push(row.map((cell) => (typeof cell === 'string' ? cell : cell.data)).join(' | '));
      },
      addRaw: (text: string) => rows.push(text),
      write: () => {
        for (const row of rows.splice(0)) write(row);
        return Promise.resolve();
      },
    },
  };
  return core;
}
