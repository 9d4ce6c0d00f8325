/** `value` (resolved against `base`, when given) as a URL when it is an http or https one; undefined for anything else, never a throw. */
export function parseHttpUrl(value: string, base?: string | URL): URL | undefined {
  let url: URL;
  try {
    url = new URL(value, base);
  } catch {
    return undefined;
  }
  return url.protocol === 'http:' || url.protocol === 'https:' ? url : undefined;
}
