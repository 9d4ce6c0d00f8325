/** Whether the npm registry answers (`npm ping`, within `timeoutMs`). */
export declare function registryReachable(timeoutMs?: number): Promise<boolean>;
/** Packs both packages, as the last `npm run build` left them, into `dest`; resolves to the tarballs' paths. */
export declare function packBoth(dest: string): Promise<{ consumer: string; server: string }>;
/** `npm install` of `tarballs` into `dir`: npm's output, its EBADENGINE lines, the time it took. */
export declare function installInto(dir: string, tarballs: readonly string[]): Promise<{ stdout: string; stderr: string; ms: number; ebadengine: string[] }>;
/** What an install left in `dir`. */
export declare function measureInstall(dir: string): Promise<{ bytes: number; packages: number; installScripts: string[]; nativeModules: string[] }>;
