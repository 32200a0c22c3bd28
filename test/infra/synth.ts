import { App, type CfnElement, type Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { AnalyticsStack } from '#infra/stacks/analytics-stack.ts';
import { stageSettings } from '#infra/stages.ts';

// Inline code instead of dist/ bundles: the tests never run esbuild and need no prior build.
const inlineCode = () => lambda.Code.fromInline('export const handler = async () => ({})');

export interface Synthesized {
  stack: AnalyticsStack;
  /** The stage's stack: everything but monitoring. */
  template: Template;
  /** The monitoring nested stack: alarms, the dashboard, the alarm topic. */
  monitoring: Template;
}

/** A stage by name (its settings from infra/stages.ts), or with overrides on top (custom domain, CORS...). */
export type StageSpec = string | { name: string; overrides: Parameters<typeof stageSettings>[1] };

/** The stages' stacks in one app, side by side as two stages share one account, not yet synthesized. */
export function buildStages(...stages: StageSpec[]): { app: App; stacks: AnalyticsStack[] } {
  const app = new App();
  const stacks = stages.map((spec) => {
    const { name, overrides } = typeof spec === 'string' ? { name: spec, overrides: {} } : spec;
    return new AnalyticsStack(app, `analytics-${name}`, { stage: stageSettings(name, overrides), code: inlineCode });
  });
  return { app, stacks };
}

/** Synthesizes the given stages side by side in one app, keyed by stage name. */
export function synthStages(...stages: StageSpec[]): Record<string, Synthesized> {
  // Build the whole tree first: the first Template.fromStack synthesizes the app, which then freezes.
  const { stacks } = buildStages(...stages);
  return Object.fromEntries(
    stacks.map((stack) => [
      stack.stage.name,
      { stack, template: Template.fromStack(stack), monitoring: Template.fromStack(stack.monitoringStack) },
    ]),
  );
}

type Resource = {
  Type: string;
  Properties?: Record<string, any>;
  DeletionPolicy?: string;
  UpdateReplacePolicy?: string;
};

export function resources(template: Template, type: string): Record<string, Resource> {
  return template.findResources(type) as Record<string, Resource>;
}

/** Logical id of an L2 construct's CloudFormation resource, as references to it appear in the template. */
export function logicalId(stack: Stack, construct: IConstruct): string {
  return stack.getLogicalId(construct.node.defaultChild as CfnElement);
}

/** Every IAM action granted to the function's role through inline policies (grants land there). */
export function roleActions(s: Synthesized, functionName: string): string[] {
  const fn = s.stack.functions.get(functionName);
  if (!fn?.role) throw new Error(`no function ${functionName}`);
  const roleId = logicalId(s.stack, fn.role);
  const actions: string[] = [];
  for (const policy of Object.values(resources(s.template, 'AWS::IAM::Policy'))) {
    const roles = (policy.Properties?.Roles ?? []) as unknown[];
    if (!roles.some((r) => JSON.stringify(r) === JSON.stringify({ Ref: roleId }))) continue;
    for (const statement of policy.Properties?.PolicyDocument.Statement ?? []) {
      actions.push(...[statement.Action].flat());
    }
  }
  return actions;
}
