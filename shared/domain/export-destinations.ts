import type { ExportRecord } from '../db/batch-exports.ts';
import { openSecrets } from '../exports/secrets.ts';
import { assumeRole } from '../exports/sts.ts';

/**
 * The destination config one run writes with: the export's own access keys (opened from their
 * sealed box), or temporary credentials of the role it names, assumed now with the organization id
 * as ExternalId. Never the exporter's own identity; the credentials live only as long as the run.
 */
export async function openDestination(e: ExportRecord): Promise<Record<string, unknown>> {
  const { config, sealed_secrets: sealed } = e.destination;
  const keys = sealed ? await openSecrets(sealed, { organization_id: e.organization_id, batch_export_id: e.id }) : {};
  if (typeof config.role_arn === 'string' && config.role_arn) {
    const temporary = await assumeRole({ roleArn: config.role_arn, externalId: e.organization_id, sessionName: `batch-export-${e.id}` });
    return { ...config, ...temporary };
  }
  return { ...config, ...keys };
}
