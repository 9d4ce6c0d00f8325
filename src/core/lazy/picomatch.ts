// Glob matching of a template's include and exclude globs: loaded on first use through ./picomatch.load.ts.
export { default as picomatch } from 'picomatch';
