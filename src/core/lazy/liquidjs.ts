// The parts of liquidjs the template layer uses: loaded on first use through ./liquidjs.load.ts.
export { defaultOperators, Liquid, Tokenizer, TokenKind, toValueSync, TypeGuards } from 'liquidjs';
