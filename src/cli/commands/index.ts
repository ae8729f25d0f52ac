/** Every CLI command, in the order `harvest --help` lists them. */
import type { Command } from 'commander';
import type { CommandContext } from '../context.ts';
import { registerCancel } from './cancel.ts';
import { registerCrawls } from './crawls.ts';
import { registerDashboard } from './dashboard.ts';
import { registerDemo } from './demo.ts';
import { registerExport } from './export.ts';
import { registerMedia } from './media.ts';
import { registerPlan } from './plan.ts';
import { registerReport } from './report.ts';
import { registerRun } from './run.ts';
import { registerSandbox } from './sandbox.ts';
import { registerSchedule } from './schedule.ts';
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
  registerSchedule,
  registerStatus,
  registerMedia,
  registerCancel,
  registerExport,
  registerReport,
  registerCrawls,
  registerDashboard,
  registerSandbox,
  registerDemo,
];
