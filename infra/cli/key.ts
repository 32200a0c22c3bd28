/**
 * `npm run key -- <create|list|revoke> ...`: manage personal API keys.
 * With TABLE_NAME set it uses that table through the usual AWS environment (credentials, region);
 * otherwise it finds the running local stack through $DATA_DIR/local.json (default .data/).
 */
import { parseArgs } from 'node:util';
import { ENV } from '#shared/config.ts';
import { issueApiKey, keysOfEmail, revokeApiKey } from '#shared/domain/api-keys.ts';
import { configureLocalEnv } from '../local/env.ts';
import { localJsonPath, readLocalJson } from '../local/local-json.ts';

const USAGE = `usage:
  npm run key -- create --email you@example.com --scopes '*' [--label NAME] [--organizations ID,ID] [--projects 1,2]
  npm run key -- list   --email you@example.com
  npm run key -- revoke --email you@example.com --key <key id | phx_...abcd>`;

async function target(): Promise<string> {
  if (process.env[ENV.tableName]) return `table ${process.env[ENV.tableName]} (AWS environment)`;
  const local = await readLocalJson();
  if (!local)
    throw new Error(
      `No ${ENV.tableName} in the environment and no local stack found at ${localJsonPath()}: start one with npm start.`,
    );
  configureLocalEnv({ tableName: local.table_name, dynamodb: local.dynamodb_endpoint });
  return `local stack ${local.base_url} (${localJsonPath()})`;
}

const list = (value: string | undefined) =>
  value
    ? value
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : [];

async function main(): Promise<void> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      email: { type: 'string' },
      scopes: { type: 'string' },
      label: { type: 'string' },
      organizations: { type: 'string' },
      projects: { type: 'string' },
      key: { type: 'string' },
    },
  });
  const [command] = positionals;
  if (!command || !values.email || !['create', 'list', 'revoke'].includes(command)) throw new Error(USAGE);
  const where = await target();
  if (command === 'create') {
    const { value, key } = await issueApiKey({
      email: values.email,
      scopes: list(values.scopes ?? '*'),
      label: values.label,
      scopedOrganizations: list(values.organizations),
      scopedTeams: list(values.projects).map(Number),
    });
    console.log(`Created key ${key.id} (${key.mask_value}) for ${values.email} on ${where}`);
    console.log(`scopes: ${key.scopes.join(' ')}`);
    console.log('\nThe key is shown once; store it now:\n');
    console.log(value);
  } else if (command === 'list') {
    const keys = await keysOfEmail(values.email);
    console.log(`${keys.length} key(s) for ${values.email} on ${where}`);
    for (const k of keys) {
      const restrictions = [
        k.scoped_organizations && `organizations=${k.scoped_organizations.join(',')}`,
        k.scoped_teams && `projects=${k.scoped_teams.join(',')}`,
      ]
        .filter(Boolean)
        .join(' ');
      console.log(
        `${k.id}  ${k.mask_value}  ${k.label}  ${k.created_at}  scopes=${k.scopes.join(',')} ${restrictions}`,
      );
    }
  } else {
    if (!values.key) throw new Error(USAGE);
    const removed = await revokeApiKey(values.email, values.key);
    if (!removed) throw new Error(`No key '${values.key}' for ${values.email} on ${where}`);
    console.log(`Revoked ${removed} key(s) on ${where}`);
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
