import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { COMMANDS, requestedCommand } from '../../../src/cli/commands/index.ts';
import { createContext } from '../../../src/cli/context.ts';

describe('the command table', () => {
  it("names each module's command with its own term (name, [options], arguments)", async () => {
    const ctx = createContext(() => {
      throw new Error('registration must not read settings');
    });
    const help = new Command().createHelp();
    for (const entry of COMMANDS) {
      const program = new Command('harvest');
      (await entry.load())(program, ctx);
      expect(program.commands).toHaveLength(1);
      const command = program.commands[0]!;
      expect({ name: command.name(), term: help.subcommandTerm(command) }).toEqual({
        name: entry.name,
        term: entry.term,
      });
      expect(entry.summary.length).toBeLessThanOrEqual(90);
    }
  });

  it('finds the command a command line asks for, help NAME included', () => {
    expect(requestedCommand(['status', '-n', '5'])?.name).toBe('status');
    expect(requestedCommand(['help', 'run'])?.name).toBe('run');
    expect(requestedCommand(['--help'])).toBeUndefined();
    expect(requestedCommand(['nope'])).toBeUndefined();
  });
});
