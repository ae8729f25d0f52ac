/** What a command says while it upgrades an existing database to this harvest's schema. */
import type { MigrationStep } from '../store/index.ts';

export function migrationNotice(step: MigrationStep): string {
  if (step.note !== undefined) return step.note;
  return step.durationMs === undefined
    ? `upgrading ${step.file} from schema version ${step.from} to ${step.to}: once, in one transaction, which takes a while on a large database…`
    : `upgraded ${step.file} to schema version ${step.to} in ${(step.durationMs / 1000).toFixed(1)} s`;
}

/** Says it on stderr, for the commands that print to a terminal. */
export function printMigration(step: MigrationStep): void {
  process.stderr.write(`${migrationNotice(step)}\n`);
}
