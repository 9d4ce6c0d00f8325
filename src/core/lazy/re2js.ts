// The linear-time regular expressions of template patterns: loaded on first use through ./re2js.load.ts.
export { RE2JS } from 're2js';
