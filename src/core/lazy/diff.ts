// Line diffs and patches (jsdiff): loaded on first use through ./diff.load.ts.
export { diffLines, structuredPatch } from 'diff';
