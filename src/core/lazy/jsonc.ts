// JSON with comments (jsonc-parser): reading, and editing that keeps comments and layout: loaded on first use through ./jsonc.load.ts.
export { applyEdits, modify, parse, printParseErrorCode } from 'jsonc-parser';
