/**
 * docker-compose.yml passes the settings of the database host's roles through to the service
 * that runs them: Compose hands a container only the variables listed, and webhooks are sent
 * only with HARVEST_NOTIFY_SECRET.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

interface Compose {
  services: Record<string, { command?: string[]; environment?: Record<string, string> }>;
}

describe('docker-compose.yml and webhooks', () => {
  it('passes HARVEST_NOTIFY_SECRET to the service that runs the runs role', () => {
    const compose = parse(readFileSync('docker-compose.yml', 'utf8')) as Compose;
    const withRuns = Object.entries(compose.services).filter(([, s]) => {
      const roles = s.command?.[s.command.indexOf('--roles') + 1] ?? '';
      return s.command?.[0] === 'worker' && roles.split(',').includes('runs');
    });
    expect(withRuns.map(([name]) => name)).toEqual(['store']);
    for (const [, service] of withRuns) {
      expect(Object.keys(service.environment ?? {})).toContain('HARVEST_NOTIFY_SECRET');
    }
  });
});
