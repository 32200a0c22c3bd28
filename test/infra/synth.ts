import { App, Stack, type CfnElement } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { AnalyticsStack } from '#infra/stacks/analytics-stack.ts';
import { stageSettings } from '#infra/stages.ts';

// Inline code instead of dist/ bundles: the tests never run esbuild and need no prior build.
const inlineCode = () => lambda.Code.fromInline('export const handler = async () => ({})');

export interface Synthesized {
  stack: AnalyticsStack;
  /**
   * The stage's stack with its API feature stacks folded in (`withApiStacks`): everything but monitoring,
   * read as if it were the one template it used to be.
   */
  template: Template;
  /** Each template as CloudFormation receives it: the stage's stack and each API feature stack. */
  templates: Record<string, Template>;
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
      {
        stack,
        template: withApiStacks(stack),
        templates: Object.fromEntries(
          [stack, ...stack.apiStacks.values()].map((s) => [s.node.id, Template.fromStack(s)] as const),
        ),
        monitoring: Template.fromStack(stack.monitoringStack),
      },
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

/** Logical id of an L2 construct's CloudFormation resource, as references to it appear in its template. */
export function logicalId(_stack: Stack, construct: IConstruct): string {
  return Stack.of(construct).getLogicalId(construct.node.defaultChild as CfnElement);
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * The stage's template with each API feature stack's resources in it, as one stack held them: a
 * nested stack's parameters are replaced by what the parent passes, the parent's reads of a nested
 * stack's outputs by the output's value. Logical ids are unique across the stacks (the layout keeps
 * them as they were), so the assertions on grants, references and ids read the same as before.
 */
function withApiStacks(stack: AnalyticsStack): Template {
  const parent = Template.fromStack(stack).toJSON() as { Resources: Record<string, { Properties?: Json }> };
  const outputs = new Map<string, Json>();
  const resources: Record<string, Json> = {};
  for (const nested of stack.apiStacks.values()) {
    const id = stack.getLogicalId(nested.nestedStackResource!);
    const passed = (parent.Resources[id]!.Properties as { Parameters?: Record<string, Json> }).Parameters ?? {};
    const template = Template.fromStack(nested).toJSON() as {
      Resources: Record<string, Json>;
      Outputs?: Record<string, { Value: Json }>;
    };
    const bound = substitute(template.Resources, (ref) => passed[ref]) as Record<string, Json>;
    Object.assign(resources, bound);
    for (const [name, output] of Object.entries(template.Outputs ?? {}))
      outputs.set(
        `${id}.Outputs.${name}`,
        substitute(output.Value, (ref) => passed[ref]),
      );
    delete parent.Resources[id];
  }
  const json = substitute(
    parent as unknown as Json,
    () => undefined,
    (getAtt) => outputs.get(getAtt),
  ) as {
    Resources: Record<string, Json>;
  };
  Object.assign(json.Resources, resources);
  return Template.fromJSON(json as unknown as Record<string, unknown>);
}

/** `value` with `{Ref: p}` replaced by `ref(p)` and `{'Fn::GetAtt': [id, attr]}` by `getAtt('id.attr')` where they answer. */
function substitute(
  value: Json,
  ref: (name: string) => Json | undefined,
  getAtt?: (path: string) => Json | undefined,
): Json {
  if (Array.isArray(value)) return value.map((v) => substitute(v, ref, getAtt));
  if (value === null || typeof value !== 'object') return value;
  const keys = Object.keys(value);
  if (keys.length === 1 && typeof value.Ref === 'string') {
    const bound = ref(value.Ref);
    if (bound !== undefined) return bound;
  }
  const att = value['Fn::GetAtt'];
  if (keys.length === 1 && getAtt && Array.isArray(att)) {
    const bound = getAtt(att.join('.'));
    if (bound !== undefined) return bound;
  }
  return Object.fromEntries(keys.map((k) => [k, substitute(value[k]!, ref, getAtt)]));
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
