import { describe, expect, it } from 'vitest';
import { stageSettings } from '#infra/stages.ts';
import { resources, synthStages } from './synth.ts';

const { dev, prod } = synthStages('dev', 'prod');

const table = (s: typeof dev) => Object.values(resources(s!.template, 'AWS::DynamoDB::Table'))[0]!;

describe('stages', () => {
  it('keeps prod data: retained table with PITR and deletion protection', () => {
    expect(table(prod)).toMatchObject({
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
      Properties: { DeletionProtectionEnabled: true, PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true } },
    });
  });

  it('lets dev be destroyed: deleted table without deletion protection', () => {
    expect(table(dev)).toMatchObject({ DeletionPolicy: 'Delete', UpdateReplacePolicy: 'Delete' });
    expect(table(dev).Properties?.DeletionProtectionEnabled).not.toBe(true);
  });

  it('applies the stage log retention and memory to every function', () => {
    for (const [s, name] of [[dev, 'dev'], [prod, 'prod']] as const) {
      const settings = stageSettings(name);
      const logGroups = Object.values(resources(s!.template, 'AWS::Logs::LogGroup'));
      expect(logGroups.length).toBeGreaterThan(0);
      for (const lg of logGroups) expect(lg.Properties?.RetentionInDays).toBe(settings.logRetention);
      for (const fn of Object.values(resources(s!.template, 'AWS::Lambda::Function'))) {
        expect(fn.Properties?.MemorySize).toBe(settings.lambdaMemoryMb);
        expect(fn.Properties?.Environment.Variables.ANALYTICS_STAGE).toBe(name);
      }
    }
    expect(stageSettings('prod').logRetention).toBeGreaterThan(stageSettings('dev').logRetention);
  });

  it('gives account-unique names per stage so two stages coexist in one account', () => {
    const names = (s: typeof dev, type: string) => Object.values(resources(s!.template, type)).map((r) => JSON.stringify(r.Properties?.Name));
    expect(names(dev, 'AWS::ApiGatewayV2::Api')).not.toEqual(names(prod, 'AWS::ApiGatewayV2::Api'));
    expect(names(dev, 'AWS::CloudFront::Function')).not.toEqual(names(prod, 'AWS::CloudFront::Function'));
  });

  it('gives unknown stage names the non-prod defaults', () => {
    const { name, ...rest } = stageSettings('feature-x');
    const { name: _dev, ...devRest } = stageSettings('dev');
    expect(name).toBe('feature-x');
    expect(rest).toEqual(devRest);
  });

  it('rejects stage names that cannot be part of a stack name', () => {
    expect(() => stageSettings('Prod_1')).toThrow(/stage must match/);
    expect(() => stageSettings('')).toThrow(/stage must match/);
  });
});
