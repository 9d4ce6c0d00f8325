/**
 * Colour on a terminal, none anywhere else. A stream is coloured when, in this order:
 * - `--no-color` is not given (it wins over everything);
 * - `FORCE_COLOR` is set to anything but `0` or `false`: coloured even through a pipe (CI logs);
 *   `FORCE_COLOR=0` turns colour off (as Node does, FORCE_COLOR wins over NO_COLOR);
 * - `NO_COLOR` is unset or empty (https://no-color.org);
 * - the stream is a terminal, and `TERM` is not `dumb`.
 */
import type { CliIo } from './io.js';

export type Env = Readonly<Record<string, string | undefined>>;

/** Whether a stream is coloured (see the module's rule). */
export function colourEnabled(isTTY: boolean | undefined, env: Env, noColorFlag: boolean): boolean {
  if (noColorFlag) return false;
  const force = env.FORCE_COLOR;
  if (force !== undefined && force !== '') return force !== '0' && force.toLowerCase() !== 'false';
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  return isTTY === true && env.TERM !== 'dumb';
}

type Paint = (text: string) => string;

export interface Style {
  readonly enabled: boolean;
  bold: Paint;
  dim: Paint;
  red: Paint;
  yellow: Paint;
  green: Paint;
  cyan: Paint;
  magenta: Paint;
}

const sgr =
  (open: number, close: number): Paint =>
  (text) =>
    text === '' ? text : `\u001b[${open}m${text}\u001b[${close}m`;

const COLOURED: Style = {
  enabled: true,
  bold: sgr(1, 22),
  dim: sgr(2, 22),
  red: sgr(31, 39),
  yellow: sgr(33, 39),
  green: sgr(32, 39),
  cyan: sgr(36, 39),
  magenta: sgr(35, 39),
};

const same: Paint = (text) => text;
const PLAIN: Style = { enabled: false, bold: same, dim: same, red: same, yellow: same, green: same, cyan: same, magenta: same };

export function style(enabled: boolean): Style {
  return enabled ? COLOURED : PLAIN;
}

/** The style of what a command writes to stdout (plain unless `runCli` found the stream may be coloured). */
export function stdoutStyle(io: CliIo): Style {
  return style(io.colour?.stdout ?? false);
}

/** The style of what a command writes to stderr. */
export function stderrStyle(io: CliIo): Style {
  return style(io.colour?.stderr ?? false);
}

/** A stability in its colour: stable green, beta yellow, experimental magenta, deprecated red. */
export function paintStability(paint: Style, stability: string, text: string = stability): string {
  switch (stability) {
    case 'stable':
      return paint.green(text);
    case 'beta':
      return paint.yellow(text);
    case 'experimental':
      return paint.magenta(text);
    case 'deprecated':
      return paint.red(text);
    default:
      return text;
  }
}

/** A problem's severity word in its colour: errors red, warnings yellow. */
export function paintSeverity(paint: Style, severity: string): string {
  return severity === 'error' ? paint.red(severity) : severity === 'warning' ? paint.yellow(severity) : severity;
}
