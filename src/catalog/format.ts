/** Numbers, dates, sizes and shell words as the catalog page writes them for people. */

const NUMBER_FORMAT = new Intl.NumberFormat('en-US');
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** `12,345`. */
export function formatNumber(n: number): string {
  return NUMBER_FORMAT.format(n);
}

/** `1 template`, `1,234 templates`. */
export function plural(n: number, one: string, many: string): string {
  return `${formatNumber(n)} ${n === 1 ? one : many}`;
}

/** `25 Nov 2026` (UTC). */
function calendarDate(time: number): string {
  const date = new Date(time);
  return `${date.getUTCDate()} ${MONTHS[date.getUTCMonth()] ?? ''} ${date.getUTCFullYear()}`;
}

/**
 * A date for people: "3 days ago" within the last month of `now`, else the calendar date. Without
 * `now` (the generator, whose page is read later) always the calendar date.
 */
export function humanDate(time: number, now?: number): string {
  if (now === undefined) return calendarDate(time);
  const seconds = Math.round((now - time) / 1000);
  if (seconds >= -60) {
    if (seconds < 60) return 'just now';
    const minutes = Math.floor(seconds / 60);
    if (minutes < 60) return minutes === 1 ? '1 minute ago' : `${minutes} minutes ago`;
    const hours = Math.floor(minutes / 60);
    if (hours < 24) return hours === 1 ? '1 hour ago' : `${hours} hours ago`;
    const days = Math.floor(hours / 24);
    if (days === 1) return 'yesterday';
    if (days < 31) return `${days} days ago`;
  }
  return calendarDate(time);
}

/** ` (12.3 kB)`; '' for anything but a size. */
export function sizeText(bytes: unknown): string {
  if (typeof bytes !== 'number' || !Number.isFinite(bytes) || bytes < 0) return '';
  if (bytes < 1024) return ` (${bytes} B)`;
  return bytes < 1048576 ? ` (${(bytes / 1024).toFixed(1)} kB)` : ` (${(bytes / 1048576).toFixed(1)} MB)`;
}

/** A word of a shell command to copy: anything but plain URL characters is single-quoted. */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9._~:/%@+,=-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`;
}
