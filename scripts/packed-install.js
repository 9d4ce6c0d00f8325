// Packs this repository's two npm packages (template-registry, template-registry-server) and
// installs them with npm into an empty folder, as a user would: what bench/install-size.js measures
// and test/package/install.test.ts runs. Needs the npm registry for the server's dependencies (the
// consumer package has none).
import { execFile } from 'node:child_process';
import { lstat, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** Whether the npm registry answers (`npm ping`, within `timeoutMs`). */
export async function registryReachable(timeoutMs = 15_000) {
  try {
    await run(NPM, ['ping'], { timeout: timeoutMs });
    return true;
  } catch {
    return false;
  }
}

/**
 * Packs both packages, as the last `npm run build` left them, into `dest` (npm pack, lifecycle
 * scripts off: rebuilding here would pull the bundles from under tests running beside this one).
 * Resolves to the tarballs' paths.
 */
export async function packBoth(dest) {
  await mkdir(dest, { recursive: true });
  for (const bundle of ['build/lib/cli.js', 'packages/server/lib/cli.js']) {
    await lstat(path.join(root, bundle)).catch(() => {
      throw new Error(`${bundle} is missing: run npm run build first`);
    });
  }
  const pack = async (cwd) => {
    const { stdout } = await run(NPM, ['pack', '--ignore-scripts', '--json', '--pack-destination', dest], { cwd, maxBuffer: 64 * 1024 * 1024 });
    return path.join(dest, JSON.parse(stdout)[0].filename);
  };
  return { consumer: await pack(root), server: await pack(path.join(root, 'packages/server')) };
}

/**
 * `npm install` of `tarballs` into `dir` (made empty with a bare package.json when it has none).
 * Resolves to npm's output, its warnings (EBADENGINE among them) and the time it took.
 */
export async function installInto(dir, tarballs) {
  await mkdir(dir, { recursive: true });
  try {
    await lstat(path.join(dir, 'package.json'));
  } catch {
    await writeFile(path.join(dir, 'package.json'), `${JSON.stringify({ name: 'install-probe', version: '1.0.0', private: true }, null, 2)}\n`);
  }
  const started = Date.now();
  const { stdout, stderr } = await run(NPM, ['install', '--no-audit', '--no-fund', '--prefer-offline', '--foreground-scripts', ...tarballs], { cwd: dir, maxBuffer: 64 * 1024 * 1024, timeout: 1_800_000 });
  return { stdout, stderr, ms: Date.now() - started, ebadengine: `${stdout}\n${stderr}`.split('\n').filter((line) => line.includes('EBADENGINE')) };
}

/** Bytes on disk (allocated blocks) of everything under `dir`, links not followed. */
async function diskBytes(dir) {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    const stat = await lstat(file);
    total += stat.blocks * 512;
    if (entry.isDirectory()) total += await diskBytes(file);
  }
  return total;
}

/** Every package folder under a node_modules folder (nested node_modules included). */
async function packageDirs(modules) {
  const dirs = [];
  let entries;
  try {
    entries = await readdir(modules, { withFileTypes: true });
  } catch {
    return dirs;
  }
  for (const entry of entries) {
    if (entry.name.startsWith('.')) continue;
    const dir = path.join(modules, entry.name);
    if (entry.name.startsWith('@')) {
      for (const scoped of await readdir(dir, { withFileTypes: true })) {
        const scopedDir = path.join(dir, scoped.name);
        dirs.push(scopedDir, ...(await packageDirs(path.join(scopedDir, 'node_modules'))));
      }
    } else {
      dirs.push(dir, ...(await packageDirs(path.join(dir, 'node_modules'))));
    }
  }
  return dirs;
}

/**
 * What an install left in `dir`: on-disk size of node_modules, the number of packages, and the
 * packages that run a script at install (preinstall, install, postinstall; or a binding.gyp, which
 * npm compiles with node-gyp) or hold a compiled native module (a .node file).
 */
export async function measureInstall(dir) {
  const modules = path.join(dir, 'node_modules');
  const dirs = await packageDirs(modules);
  const installScripts = [];
  const nativeModules = [];
  for (const pkgDir of dirs) {
    let manifest;
    try {
      manifest = JSON.parse(await readFile(path.join(pkgDir, 'package.json'), 'utf8'));
    } catch {
      continue;
    }
    const name = path.relative(modules, pkgDir);
    const scripts = ['preinstall', 'install', 'postinstall'].filter((hook) => manifest.scripts?.[hook]);
    const gyp = await lstat(path.join(pkgDir, 'binding.gyp')).then(() => true, () => false);
    if (scripts.length > 0 || gyp) installScripts.push(`${name}: ${scripts.map((hook) => `${hook}: ${manifest.scripts[hook]}`).join('; ') || 'binding.gyp'}`);
    const built = await readdir(pkgDir, { recursive: true }).then((files) => files.some((file) => String(file).endsWith('.node')), () => false);
    if (built) nativeModules.push(name);
  }
  return { bytes: await diskBytes(modules), packages: dirs.length, installScripts, nativeModules };
}
