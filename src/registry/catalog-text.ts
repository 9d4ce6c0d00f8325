/**
 * Text and links made from strangers' strings, for the catalog page (server side, and embedded in
 * its script: `safeUrl` runs in the page too, so it must stay self-contained).
 */

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escapes text for HTML content and (quoted) attribute values. */
export function escapeHtml(text: string | number | null | undefined): string {
  return String(text ?? '').replace(/[&<>"']/g, (c) => HTML_ESCAPES[c] ?? c);
}

/** `url` when it is an http(s) URL or a relative one; undefined for anything else (javascript:, data:, ...). */
export function safeUrl(url: unknown): string | undefined {
  if (typeof url !== 'string' || url.trim() === '') return undefined;
  try {
    const parsed = new URL(url, 'https://relative.invalid/');
    return parsed.protocol === 'https:' || parsed.protocol === 'http:' ? url : undefined;
  } catch {
    return undefined;
  }
}
