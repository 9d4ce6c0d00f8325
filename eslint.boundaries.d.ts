/** The layers of src/: each folder and the folders it may import (see eslint.boundaries.js). */
export declare const LAYERS: Readonly<Record<string, readonly string[]>>;
export declare const boundariesConfig: import('eslint').Linter.Config;
