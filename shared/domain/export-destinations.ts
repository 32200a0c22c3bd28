import type { ExportRecord } from '../db/batch-exports.ts';
import { DestinationError } from '../exports/destination-http.ts';
import { openSecrets } from '../exports/secrets.ts';
import { logger } from '../observability.ts';
import { assumeRole } from '../exports/sts.ts';

/**
 * The destination config one run writes with: the export's own access keys (opened from their
 * sealed box), or temporary credentials of the role it names, assumed now with the organization id
 * as ExternalId. Never the exporter's own identity; the credentials live only as long as the run.
 */
export async function openDestination(e: ExportRecord): Promise<Record<string, unknown>> {
  const { config, sealed_secrets: sealed } = e.destination;
  const keys = sealed
    ? await openSecrets(sealed, { organization_id: e.organization_id, batch_export_id: e.id }).catch(
        (error: unknown) => {
          // KMS's messages name our account, key and role: they go to our logs, not to the tenant's run.
          logger.error('cannot open batch export secrets', {
            batch_export_id: e.id,
            error: error instanceof Error ? error.message : String(error),
          });
          throw new DestinationError(
            'Could not open the stored credentials of this destination (a service-side problem; the run is retried).',
          );
        },
      )
    : {};
  if (typeof config.role_arn === 'string' && config.role_arn) {
    const temporary = await assumeRole({
      roleArn: config.role_arn,
      externalId: e.organization_id,
      sessionName: `batch-export-${e.id}`,
    });
    return { ...config, ...temporary };
  }
  return { ...config, ...keys };
}
