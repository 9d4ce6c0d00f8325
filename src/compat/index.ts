export { checkCompatibility, inRange, type CheckOptions, type DeclaredRange, type DeclaredPlatform } from './check.js';
