/** `harvest schema`: print the JSON Schema of pipeline files (pipelines/pipeline.schema.json). */
import type { Command } from 'commander';
import { pipelineJsonSchema } from '../../pipeline/index.ts';
import type { CommandContext } from '../context.ts';

/** The committed file's exact text. */
export function pipelineSchemaText(): string {
  return `${JSON.stringify(pipelineJsonSchema(), null, 2)}\n`;
}

export function registerSchema(program: Command, _ctx: CommandContext): void {
  program
    .command('schema')
    .description('Print the JSON Schema of pipeline files.')
    .addHelpText('after', '\nExample:\n  harvest schema > pipeline.schema.json')
    .action(() => {
      process.stdout.write(pipelineSchemaText());
    });
}
