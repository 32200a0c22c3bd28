/**
 * CDK app (`npx cdk synth|deploy -c stage=<name>`). Environment-agnostic: synth needs no AWS
 * credentials, and the account/region come from the deploying profile.
 */
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { buildFunctions } from '#infra/build.ts';
import { AnalyticsStack } from '#infra/stacks/analytics-stack.ts';
import { resourcePrefix, stageSettings } from '#infra/stages.ts';

const app = new App();
const stage = stageSettings(String(app.node.tryGetContext('stage') ?? 'dev'));

// One esbuild call for every handler; the stack then only points Code.fromAsset at the outputs.
await buildFunctions();

new AnalyticsStack(app, resourcePrefix(stage), {
  stage,
  description: `PostHog-compatible analytics API (${stage.name})`,
  tags: { service: 'analytics', stage: stage.name },
});

// cdk-nag AwsSolutions on every synth and deploy: an unacknowledged finding fails the synthesis.
// Accepted findings and their reasons: infra/constructs/nag.ts.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));

app.synth();
