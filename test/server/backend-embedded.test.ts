/** The shared server suite (backend-suite.ts) on the embedded default: SQLite and files in one store folder. */
import { openStorage } from '../../src/store/index.js';
import { tempDir } from '../helpers/fixtures.js';
import { backendSuite } from './backend-suite.js';

backendSuite('the embedded store (SQLite + folder)', async () => openStorage({ store: await tempDir('tr-store-') }));
