// Ajv (draft 2020-12; the default `ajv` export only knows draft-07) and its formats: loaded on first use through ./ajv.load.ts.
import addFormatsImport from 'ajv-formats';
import type { Ajv2020 } from 'ajv/dist/2020.js';

export { Ajv2020 } from 'ajv/dist/2020.js';
export { fullFormats } from 'ajv-formats/dist/formats.js';

// ajv-formats ships CommonJS typings whose default export does not line up with NodeNext's view of it.
export const addFormats = addFormatsImport as unknown as (ajv: Ajv2020) => Ajv2020;
