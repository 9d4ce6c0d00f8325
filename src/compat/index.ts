export {
  checkCompatibility,
  checkEntryCompatibility,
  checkedEntry,
  declaresRuntime,
  inRange,
  KNOWN_PLATFORMS,
  type CheckedRuntime,
  type CheckOptions,
  type DeclaredRange,
  type DeclaredPlatform,
} from './check.js';
