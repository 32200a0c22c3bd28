import { defineConfig } from 'vitest/config';

/**
 * Three projects, all run by `npm test`: `unit` (pure logic and mocked SDK error paths: no Java, no
 * emulator), `infra` (CDK synth and assertions) and `integration` (HTTP -> handlers -> DynamoDB
 * Local, with a local SQS and S3 started once for the run). `npx vitest run --project unit` runs one.
 */
export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 3,
    reporters: ['default'],
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['test/unit/**/*.test.ts'], setupFiles: ['test/support/unit-env.ts'] },
      },
      {
        extends: true,
        test: { name: 'infra', include: ['test/infra/**/*.test.ts'], setupFiles: ['test/support/unit-env.ts'] },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/support/global-setup.ts'],
          setupFiles: ['test/support/env.ts'],
        },
      },
    ],
  },
});
