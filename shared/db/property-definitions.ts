import { UpdateCommand } from '../aws/dynamodb.ts';
import { inParallel } from './batch.ts';
import { call, db, tableName } from './client.ts';
import { keys, type ItemKey } from './keys.ts';
import { queryAll } from './query.ts';

export type PropertyType = 'String' | 'Numeric' | 'Boolean' | 'DateTime';

/** A property key as ingestion saw it: where (`event` names the event of a per-name entry) and the type of its first typed value. */
export interface PropertyKeySighting {
  projectId: number;
  kind: 'event' | 'person';
  key: string;
  /** Set on the per-event-name entry only. */
  event?: string;
  type: PropertyType | null;
}

export interface StoredPropertyDefinition {
  key: string;
  type: PropertyType | null;
}

const WRITES_IN_FLIGHT = 8;

function keyOf(s: PropertyKeySighting): ItemKey {
  if (s.kind === 'person') return keys.personPropertyDefinition(s.projectId, s.key);
  return s.event === undefined
    ? keys.eventPropertyDefinition(s.projectId, s.key)
    : keys.eventNamePropertyDefinition(s.projectId, s.event, s.key);
}

/**
 * Records sightings idempotently: the first typed value fixes `property_type` (PostHog keeps the type it
 * inferred first), so a redelivered batch or a later differently-typed value changes nothing.
 */
export async function recordPropertyKeys(sightings: readonly PropertyKeySighting[]): Promise<void> {
  await inParallel(sightings, WRITES_IN_FLIGHT, (s) => {
    const typed = s.type !== null;
    return call(() =>
      db().send(
        new UpdateCommand({
          TableName: tableName(),
          Key: keyOf(s),
          UpdateExpression: `SET entity = :e, property_key = :k${typed ? ', property_type = if_not_exists(property_type, :t)' : ''}`,
          ExpressionAttributeValues: {
            ':e': 'PropertyDefinition',
            ':k': s.key,
            ...(typed ? { ':t': s.type } : {}),
          },
        }),
      ),
    );
  });
}

const projection = {
  expression: '#k, #t',
  names: { '#k': 'property_key', '#t': 'property_type' },
};

/**
 * The stored keys of one kind, in key order: every event key, the keys seen on one event name, or every
 * person key; at most `limit` (+1 read, so the caller knows when there were more).
 */
export async function readPropertyKeys(
  projectId: number,
  of: { kind: 'event'; event?: string } | { kind: 'person' },
  limit: number,
): Promise<{ keys: StoredPropertyDefinition[]; more: boolean }> {
  const prefix =
    of.kind === 'person'
      ? keys.personPropertyDefinitionPrefix
      : of.event === undefined
        ? keys.eventPropertyDefinitionPrefix
        : keys.eventNamePropertyDefinitionPrefix(of.event);
  const items = await queryAll(keys.propertyDefinitions(projectId).pk, prefix, { limit: limit + 1, projection });
  return {
    keys: items.slice(0, limit).map((item) => ({
      key: String(item.property_key),
      type: typeof item.property_type === 'string' ? (item.property_type as PropertyType) : null,
    })),
    more: items.length > limit,
  };
}
