/** Every CLI command, in the order `harvest --help` lists them. */
import type { Command } from 'commander';
import type { CommandContext } from '../context.ts';
import { registerDemo } from './demo.ts';
import { registerPlan } from './plan.ts';
import { registerRun } from './run.ts';
import { registerSandbox } from './sandbox.ts';
import { registerSchema } from './schema.ts';
import { registerStatus } from './status.ts';
import { registerValidate } from './validate.ts';
import { registerWorker } from './worker.ts';

export type RegisterCommand = (program: Command, ctx: CommandContext) => void;

export const COMMANDS: RegisterCommand[] = [
  registerValidate,
  registerPlan,
  registerSchema,
  registerRun,
  registerWorker,
  registerStatus,
  registerSandbox,
  registerDemo,
];
