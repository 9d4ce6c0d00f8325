// The part of ssri 13's API this project uses (@types/ssri describes an older release).
declare module 'ssri' {
  export interface Hash {
    readonly algorithm: string;
    readonly digest: string;
  }
  export interface Integrity {
    readonly [algorithm: string]: readonly Hash[] | undefined;
  }
  export interface IntegrityMethods {
    isEmpty(): boolean;
    pickAlgorithm(): string | null;
    match(other: string | Integrity): Hash | false;
  }
  export interface Hasher {
    update(chunk: Buffer | string): Hasher;
    digest(): Integrity;
  }
  export function parse(sri: string, options: { strict: true }): Integrity & IntegrityMethods;
  export function create(options: { algorithms: readonly string[] }): Hasher;
  const ssri: { parse: typeof parse; create: typeof create };
  export default ssri;
}
