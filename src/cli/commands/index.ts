/** Every CLI command, in the order `harvest --help` lists them. */
import type { Command } from 'commander';
import type { CommandContext } from '../context.ts';

export type RegisterCommand = (program: Command, ctx: CommandContext) => void;

export const COMMANDS: RegisterCommand[] = [];
