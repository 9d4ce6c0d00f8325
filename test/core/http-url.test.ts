/** What counts as an http(s) URL, for every flag, input and document that takes one (core/http-url.ts). */
import { describe, expect, it } from 'vitest';

import { parseHttpUrl } from '../../src/core/http-url.js';

describe('parseHttpUrl', () => {
  it('takes http and https URLs, relative ones only against a base', () => {
    expect(parseHttpUrl('https://registry.example/a?b=1')?.href).toBe('https://registry.example/a?b=1');
    expect(parseHttpUrl('HTTP://registry.example')?.protocol).toBe('http:');
    expect(parseHttpUrl('/x', 'https://registry.example/a/')?.href).toBe('https://registry.example/x');
    expect(parseHttpUrl('.', 'https://registry.example/a/registry.json')?.href).toBe('https://registry.example/a/');
  });

  it('answers undefined, never a throw, for anything else', () => {
    for (const value of ['', 'registry.example', '/relative', 'javascript:alert(1)', 'file:///etc/passwd', 'ftp://registry.example', 'data:text/plain,x', 'http://']) {
      expect(parseHttpUrl(value), value).toBeUndefined();
    }
    expect(parseHttpUrl('javascript:alert(1)', 'https://registry.example/')).toBeUndefined();
  });
});
