import { PUBLISH_STEP_TITLES, type PublishHooks } from './pipeline.js';

/** Where a progress line is drawn: a terminal (`isTTY`) gets it; a pipe or a file gets nothing. */
export interface ProgressStream {
  isTTY?: boolean;
  write(text: string): unknown;
}

/** A line on a terminal showing how much of the upload is sent, rewritten in place. */
export interface UploadProgressLine {
  update(sent: number, total: number): void;
  /** Blanks the line (the cursor back at its start), so that the next output starts on a clean line. */
  clear(): void;
}

export interface UploadProgressOptions {
  /** The clock, in milliseconds (tests pass their own). */
  now?: () => number;
  /** The shortest time between two redraws (default 100 ms: at most 10 a second). */
  minIntervalMs?: number;
}

/** `512 B`, `12.3 KiB`, `4.0 MiB`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit] ?? 'TiB'}`;
}

/** `uploading 12.3 KiB / 45.6 KiB (27%)`. */
export function uploadProgressText(sent: number, total: number): string {
  const percent = total > 0 ? Math.min(100, Math.floor((sent / total) * 100)) : 100;
  return `uploading ${formatBytes(sent)} / ${formatBytes(total)} (${percent}%)`;
}

/**
 * The upload progress line of a terminal, or undefined when `stream` is not one (a pipe, a log
 * file, CI): there a line rewritten with `\r` would only be noise. Redraws are throttled to one per
 * `minIntervalMs`; the first, and the one reaching the total, are drawn at once.
 */
export function uploadProgressLine(stream: ProgressStream, options: UploadProgressOptions = {}): UploadProgressLine | undefined {
  if (stream.isTTY !== true) return undefined;
  const now = options.now ?? Date.now;
  const minIntervalMs = options.minIntervalMs ?? 100;
  let drawnAt: number | undefined;
  let width = 0;
  return {
    update(sent, total) {
      const time = now();
      // The end is always drawn: the registry checks the archive before it answers, and 100% says the wait is theirs.
      const done = sent >= total;
      if (drawnAt !== undefined && time - drawnAt < minIntervalMs && !done) return;
      drawnAt = time;
      const text = uploadProgressText(sent, total);
      // Padding covers what is left of a longer previous text.
      stream.write(`\r${text.padEnd(width)}`);
      width = text.length;
    },
    clear() {
      if (width === 0) return;
      stream.write(`\r${' '.repeat(width)}\r`);
      width = 0;
      // The next attempt (after a retry) draws its first update at once.
      drawnAt = undefined;
    },
  };
}

export interface PublishPrinterOptions {
  /** The upload progress line (see `uploadProgressLine`); cleared before any other line is written. */
  progress?: UploadProgressLine;
}

/**
 * Hooks that print the pipeline's progress as plain lines, for a terminal or a log: each finding
 * (`file:line:col severity rule message`, or the validation line), the result of each step, and
 * upload retries; with `progress`, the upload's progress line too. The failure itself is left to
 * the caller (the error is thrown).
 */
export function publishProgressPrinter(write: (line: string) => void, options: PublishPrinterOptions = {}): PublishHooks {
  const { progress } = options;
  const line = (text: string): void => {
    progress?.clear();
    write(text);
  };
  return {
    onFinding: (finding) => line(finding.text),
    onInfo: (_step, message) => line(`  ${message}`),
    onStepFinished: (step, result) => line(`${PUBLISH_STEP_TITLES[step]}: ${result}`),
    onStepSkipped: (step, reason) => line(`${PUBLISH_STEP_TITLES[step]}: skipped (${reason})`),
    onStepFailed: () => progress?.clear(),
    onRetry: ({ attempt, delayMs, reason }) => line(`attempt ${attempt} failed (${reason}); retrying in ${(delayMs / 1000).toFixed(1)} s`),
    ...(progress ? { onUploadProgress: (sent: number, total: number) => progress.update(sent, total) } : {}),
  };
}
