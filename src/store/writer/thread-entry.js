// Entry of the SQLite writer thread: loads the TypeScript sources through tsx, as bin/harvest.js
// does for the main thread.
import { register } from 'tsx/esm/api';

register();
await import('./thread-worker.ts');
