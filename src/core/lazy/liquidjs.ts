// The parts of liquidjs the template layer uses: see core/lazy-packages.ts.
export { defaultOperators, Liquid, Tokenizer, TokenKind, toValueSync, TypeGuards } from 'liquidjs';
