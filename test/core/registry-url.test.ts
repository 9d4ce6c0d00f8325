/** One registry setting: a base URL or the document's URL, turned into what each side needs. */
import { describe, expect, it } from 'vitest';

import { registryBaseUrl, registryDocumentUrl, registryUrlProblem } from '../../src/core/registry-url.js';

describe('registryDocumentUrl (what list, info, create, migrate and check-compat read)', () => {
  it('appends registry.json to a base URL, with or without a trailing slash or a path', () => {
    expect(registryDocumentUrl('https://registry.example')).toBe('https://registry.example/registry.json');
    expect(registryDocumentUrl('https://registry.example/')).toBe('https://registry.example/registry.json');
    expect(registryDocumentUrl('http://127.0.0.1:4873')).toBe('http://127.0.0.1:4873/registry.json');
    expect(registryDocumentUrl('https://cdn.example/teams/web/')).toBe('https://cdn.example/teams/web/registry.json');
    expect(registryDocumentUrl('https://cdn.example/teams/web//')).toBe('https://cdn.example/teams/web/registry.json');
  });

  it('keeps a URL that names a .json file as it is', () => {
    expect(registryDocumentUrl('https://registry.example/registry.json')).toBe('https://registry.example/registry.json');
    expect(registryDocumentUrl('https://raw.example/org/repo/main/templates.json')).toBe('https://raw.example/org/repo/main/templates.json');
  });

  it('reads index.json (the sparse index) as the registry.json beside it', () => {
    expect(registryDocumentUrl('https://cdn.example/reg/index.json')).toBe('https://cdn.example/reg/registry.json');
  });

  it('keeps the query (a signed URL) and drops the fragment', () => {
    expect(registryDocumentUrl('https://bucket.example/reg?sig=abc')).toBe('https://bucket.example/reg/registry.json?sig=abc');
    expect(registryDocumentUrl('https://bucket.example/reg/registry.json?sig=abc#top')).toBe('https://bucket.example/reg/registry.json?sig=abc');
  });
});

describe('registryBaseUrl (what publish posts <base>/templates to)', () => {
  it('drops the file name of a document URL', () => {
    expect(registryBaseUrl('http://127.0.0.1:4873/registry.json')).toBe('http://127.0.0.1:4873');
    expect(registryBaseUrl('https://registry.example/api/registry.json')).toBe('https://registry.example/api');
    expect(registryBaseUrl('https://registry.example/api/index.json')).toBe('https://registry.example/api');
  });

  it('keeps a base URL, without its trailing slash', () => {
    expect(registryBaseUrl('https://registry.example')).toBe('https://registry.example');
    expect(registryBaseUrl('https://registry.example/')).toBe('https://registry.example');
    expect(registryBaseUrl('https://registry.example/api/')).toBe('https://registry.example/api');
    expect(registryBaseUrl('https://registry.example/?team=web')).toBe('https://registry.example?team=web');
  });

  it('and the document of a base is the document it came from (both forms name one registry)', () => {
    for (const url of ['https://r.example', 'https://r.example/registry.json', 'https://r.example/a/b/', 'https://r.example/a/b/registry.json']) {
      expect(registryDocumentUrl(registryBaseUrl(url))).toBe(registryDocumentUrl(url));
    }
  });
});

describe('registryUrlProblem', () => {
  it('accepts http(s) URLs only, and leaves anything else for the caller to report', () => {
    expect(registryUrlProblem('https://registry.example')).toBeUndefined();
    expect(registryUrlProblem('ftp://registry.example')).toMatch(/must be an http\(s\) URL/);
    expect(registryUrlProblem('registry.example')).toMatch(/got "registry.example"/);
    expect(registryBaseUrl('not a url')).toBe('not a url');
    expect(registryDocumentUrl('ftp://x/y')).toBe('ftp://x/y');
  });
});
