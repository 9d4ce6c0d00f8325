import { describe, expect, it } from 'vitest';

import { formatBytes, publishProgressPrinter, uploadProgressLine, uploadProgressText, type ProgressStream } from '../../src/publish/progress.js';

/** A stream that records what is written to it; `isTTY` says whether it plays a terminal or a pipe. */
function fakeStream(isTTY: boolean): ProgressStream & { written: string } {
  const stream = {
    isTTY,
    written: '',
    write(text: string) {
      stream.written += text;
      return true;
    },
  };
  return stream;
}

/** What a terminal shows after `output`: `\r` returns to the start of the line, characters overwrite, `\n` starts a new line. */
function screen(output: string): string[] {
  const lines: string[][] = [[]];
  let column = 0;
  for (const char of output) {
    const line = lines[lines.length - 1]!;
    if (char === '\r') column = 0;
    else if (char === '\n') {
      lines.push([]);
      column = 0;
    } else {
      line[column] = char;
      column++;
    }
  }
  return lines.map((line) => line.join('').trimEnd());
}

/** A clock the test moves by hand. */
function manualClock() {
  let time = 0;
  return { now: () => time, advance: (ms: number) => void (time += ms) };
}

describe('the upload progress line', () => {
  it('says bytes sent, the total and the percentage', () => {
    expect(uploadProgressText(0, 5000)).toBe('uploading 0 B / 4.9 KiB (0%)');
    expect(uploadProgressText(3 * 1024 * 1024, 12 * 1024 * 1024)).toBe('uploading 3.0 MiB / 12.0 MiB (25%)');
    expect(uploadProgressText(999, 999)).toBe('uploading 999 B / 999 B (100%)');
    expect(formatBytes(1536)).toBe('1.5 KiB');
  });

  it('redraws in place on a terminal at most ten times a second, always shows the end, and clears itself', () => {
    const stream = fakeStream(true);
    const clock = manualClock();
    const line = uploadProgressLine(stream, { now: clock.now })!;
    const total = 10 * 1024 * 1024;
    // A fast upload: a thousand updates in one second.
    for (let step = 0; step <= 1000; step++) {
      line.update(Math.round((total * step) / 1000), total);
      clock.advance(1);
    }
    const draws = stream.written.split('\r').filter((part) => part !== '');
    expect(draws.length).toBeLessThanOrEqual(12);
    expect(draws.length).toBeGreaterThanOrEqual(10);
    expect(draws[0]).toBe('uploading 0 B / 10.0 MiB (0%)');
    expect(draws.at(-1)).toBe('uploading 10.0 MiB / 10.0 MiB (100%)');
    expect(stream.written).not.toContain('\n');
    expect(screen(stream.written)).toEqual(['uploading 10.0 MiB / 10.0 MiB (100%)']);

    line.clear();
    expect(screen(stream.written)).toEqual(['']);
    // The cursor is back at the start of the blank line: what comes next starts there.
    stream.write('Upload: uploaded\n');
    expect(screen(stream.written)).toEqual(['Upload: uploaded', '']);
  });

  it('leaves no trace of a longer earlier text', () => {
    const stream = fakeStream(true);
    const clock = manualClock();
    const line = uploadProgressLine(stream, { now: clock.now })!;
    line.update(1024 * 1024, 2 * 1024 * 1024);
    clock.advance(500);
    line.update(0, 2 * 1024 * 1024);
    expect(screen(stream.written)).toEqual(['uploading 0 B / 2.0 MiB (0%)']);
  });

  it('draws nothing in a pipe', () => {
    expect(uploadProgressLine(fakeStream(false))).toBeUndefined();
    expect(uploadProgressLine({ write: () => true })).toBeUndefined();
  });
});

describe('publishProgressPrinter with a progress line', () => {
  it('clears the progress line before any other line, so a retry starts on a clean line', () => {
    const stream = fakeStream(true);
    const clock = manualClock();
    const progress = uploadProgressLine(stream, { now: clock.now })!;
    const printer = publishProgressPrinter((text) => stream.write(`${text}\n`), { progress });
    printer.onStepStarted?.('upload');
    printer.onUploadProgress?.(512, 4096);
    printer.onRetry?.({ attempt: 1, delayMs: 500, reason: 'HTTP 503' });
    printer.onUploadProgress?.(4096, 4096);
    printer.onStepFinished?.('upload', 'uploaded to https://registry.test');
    expect(screen(stream.written)).toEqual(['attempt 1 failed (HTTP 503); retrying in 0.5 s', 'Upload: uploaded to https://registry.test', '']);
    expect(stream.written).toContain('\ruploading 512 B / 4.0 KiB (12%)');
    expect(stream.written).toContain('\ruploading 4.0 KiB / 4.0 KiB (100%)');
  });

  it('clears it when the upload fails', () => {
    const stream = fakeStream(true);
    const progress = uploadProgressLine(stream)!;
    const printer = publishProgressPrinter((text) => stream.write(`${text}\n`), { progress });
    printer.onUploadProgress?.(100, 4096);
    printer.onStepFailed?.('upload', Object.assign(new Error('HTTP 403'), { step: 'upload' as const, name: 'PublishPipelineError' as const }));
    expect(screen(stream.written)).toEqual(['']);
  });

  it('without one, prints no progress at all', () => {
    const lines: string[] = [];
    const printer = publishProgressPrinter((text) => lines.push(text));
    expect('onUploadProgress' in printer).toBe(false);
    printer.onRetry?.({ attempt: 1, delayMs: 500, reason: 'HTTP 503' });
    expect(lines).toEqual(['attempt 1 failed (HTTP 503); retrying in 0.5 s']);
  });
});
