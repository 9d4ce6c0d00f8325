// The linear-time regular expressions of template patterns: see core/lazy-packages.ts.
export { RE2JS } from 're2js';
