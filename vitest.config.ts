import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Integration files run two at a time: most of their time is spent waiting (on the sandbox's
    // latency, on polls, on child processes), and each has a Redis prefix, a sandbox port and a
    // temp folder of its own. Unit files run in threads beside them.
    poolOptions: { forks: { minForks: 1, maxForks: 2 } },
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          testTimeout: 20_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          pool: 'forks',
          testTimeout: 60_000,
          hookTimeout: 30_000,
        },
      },
    ],
  },
});
