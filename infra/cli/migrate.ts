/**
 * `npm run migrate -- <migration>`: one-off data moves. Against the running local stack found through
 * $DATA_DIR/local.json, or, with TABLE_NAME set (and AWS credentials in the environment), that table.
 * Each migration can be repeated and interrupted safely.
 */
import { indexPersonUuids } from '#shared/db/persons.ts';
import { moveLegacyDayCounters } from '#shared/db/segments.ts';
import { configureLocalEnv } from '../local/env.ts';
import { localJsonPath, readLocalJson } from '../local/local-json.ts';

const migrations: Record<string, { what: string; run: () => Promise<number> }> = {
  'day-counters': {
    what: 'day counters from their day partitions to their month partitions (docs/operations.md, November 2026)',
    run: moveLegacyDayCounters,
  },
  'person-uuids': {
    what: 'persons written before the personsByUuid index get its key, so PostHog uuids find them (docs/operations.md, November 2026)',
    run: indexPersonUuids,
  },
};

async function main(): Promise<void> {
  const [name] = process.argv.slice(2).filter((a) => a !== '--');
  const migration = name === undefined ? undefined : migrations[name];
  if (!migration)
    throw new Error(
      `usage: npm run migrate -- <migration>\nmigrations:\n${Object.entries(migrations)
        .map(([n, m]) => `  ${n}  ${m.what}`)
        .join('\n')}`,
    );
  if (!process.env.TABLE_NAME) {
    const local = await readLocalJson();
    if (!local)
      throw new Error(`No local stack found at ${localJsonPath()}: start one with npm start, or set TABLE_NAME.`);
    configureLocalEnv({ tableName: local.table_name, dynamodb: local.dynamodb_endpoint });
  }
  const started = Date.now();
  const moved = await migration.run();
  console.log(`${name}: ${moved} moved in ${Date.now() - started} ms`);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
