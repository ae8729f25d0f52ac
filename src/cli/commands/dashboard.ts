/** `harvest dashboard`: Bull Board over harvest's queues, until interrupted. */
import type { Command } from 'commander';
import type { CommandContext } from '../context.ts';
import { port } from '../flags.ts';
import { serveUntilStopped } from '../signals.ts';

const DEFAULT_PORT = 3100;

interface DashboardFlags {
  port: number;
  host: string;
  allowActions?: boolean;
}

export function registerDashboard(program: Command, ctx: CommandContext): void {
  program
    .command('dashboard')
    .description(
      "Serve Bull Board over harvest's queues (jobs waiting, active, delayed, failed, with their " +
        'data and errors). Read-only unless --allow-actions. Listens on 127.0.0.1; another ' +
        'address needs HARVEST_DASHBOARD_USER and HARVEST_DASHBOARD_PASSWORD (basic auth).',
    )
    .option('--port <port>', 'TCP port (0 picks a free one)', port, DEFAULT_PORT)
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .option('--allow-actions', 'let the page retry, clean, promote, pause and remove jobs')
    .addHelpText(
      'after',
      '\nExamples:\n' +
        '  harvest dashboard                              # http://127.0.0.1:3100/, read-only\n' +
        '  harvest dashboard --port 8080 --allow-actions\n' +
        '  HARVEST_DASHBOARD_USER=ops HARVEST_DASHBOARD_PASSWORD=... harvest dashboard --host 0.0.0.0',
    )
    .action(async (flags: DashboardFlags) => {
      const settings = ctx.settings();
      const { dashboardCredentials } = await import('../../dashboard/access.ts');
      const auth = dashboardCredentials(flags.host, settings.dashboardAuth);
      const { assertRedisReachable } = await import('../../queue/connection.ts');
      await assertRedisReachable(settings.redisUrl);
      const { startDashboard } = await import('../../dashboard/server.ts');
      await serveUntilStopped(async () => {
        const dashboard = await startDashboard({
          redisUrl: settings.redisUrl,
          prefix: settings.queuePrefix,
          host: flags.host,
          port: flags.port,
          allowActions: Boolean(flags.allowActions),
          ...(auth ? { auth } : {}),
        });
        const mode = dashboard.readOnly
          ? 'read-only; --allow-actions to act on jobs'
          : 'actions allowed';
        console.log(`dashboard on ${dashboard.url} (${mode}${auth ? ', basic auth' : ''})`);
        return () => dashboard.close();
      });
    });
}
