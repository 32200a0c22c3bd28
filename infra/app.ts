/**
 * CDK app (`npx cdk synth|deploy -c stage=<name>`). Environment-agnostic: synth needs no AWS
 * credentials, and the account/region come from the deploying profile.
 */
import { App } from 'aws-cdk-lib';
import { buildFunctions } from '#infra/build.ts';
import { AnalyticsStack } from '#infra/stacks/analytics-stack.ts';
import { stageSettings } from '#infra/stages.ts';

const app = new App();
const stage = stageSettings(String(app.node.tryGetContext('stage') ?? 'dev'));

// One esbuild call for every handler; the stack then only points Code.fromAsset at the outputs.
await buildFunctions();

new AnalyticsStack(app, `analytics-${stage.name}`, {
  stage,
  description: `PostHog-compatible analytics API (${stage.name})`,
  tags: { service: 'analytics', stage: stage.name },
});

app.synth();
