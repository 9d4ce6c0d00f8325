/**
 * Text and links made from strangers' strings, for the catalog page: the generator's HTML and the
 * page's script both go through these.
 */

import { parseHttpUrl } from '../core/http-url.js';

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escapes text for HTML content and (quoted) attribute values. */
export function escapeHtml(text: string | number | null | undefined): string {
  return String(text ?? '').replace(/[&<>"']/g, (c) => HTML_ESCAPES[c] ?? c);
}

/** `url` when it is an http(s) URL or a relative one; undefined for anything else (javascript:, data:, ...). */
export function safeUrl(url: unknown): string | undefined {
  if (typeof url !== 'string' || url.trim() === '') return undefined;
  return parseHttpUrl(url, 'https://relative.invalid/') ? url : undefined;
}

/** `url` when it is an absolute http(s) URL; undefined for anything else (relative ones included). */
export function absoluteHttpUrl(url: unknown): string | undefined {
  if (typeof url !== 'string') return undefined;
  return parseHttpUrl(url)?.href;
}
