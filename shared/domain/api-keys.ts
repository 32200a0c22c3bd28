import { generatePersonalApiKey, maskValue, secureValue } from '../auth/api-keys.ts';
import { isGrantableScope } from '../auth/scopes.ts';
import { deleteApiKey, findUserIdByEmail, listApiKeys, putApiKey, type ApiKeyRecord } from '../db/users.ts';
import { ValidationError } from '../errors.ts';
import { nowIso } from '../clock.ts';
import { uuidv7 } from '../ids.ts';
import { ensureUser } from './users.ts';

export interface NewKeyInput {
  email: string;
  scopes: string[];
  label?: string;
  scopedOrganizations?: string[];
  scopedTeams?: number[];
}

export const MAX_KEYS_PER_USER = 10;

/** Issues a personal API key; the raw value is returned here and never again. */
export async function issueApiKey(input: NewKeyInput): Promise<{ value: string; key: ApiKeyRecord }> {
  const invalid = input.scopes.find((s) => !isGrantableScope(s));
  if (invalid !== undefined) throw new ValidationError(`Invalid scope: ${invalid}`, 'scopes');
  if (input.scopes.length === 0) throw new ValidationError('At least one scope is required.', 'scopes', 'required');
  const user = await ensureUser(input.email);
  if ((await listApiKeys(user.id)).length >= MAX_KEYS_PER_USER) {
    throw new ValidationError(
      `You can only have ${MAX_KEYS_PER_USER} personal API keys. Remove an existing key before creating a new one.`,
      null,
    );
  }
  const value = generatePersonalApiKey();
  const key: ApiKeyRecord = {
    id: uuidv7(),
    user_id: user.id,
    label: (input.label ?? 'cli').slice(0, 40),
    mask_value: maskValue(value),
    secure_value: secureValue(value),
    scopes: [...new Set(input.scopes)],
    scoped_organizations: input.scopedOrganizations?.length ? input.scopedOrganizations : null,
    scoped_teams: input.scopedTeams?.length ? input.scopedTeams : null,
    created_at: nowIso(),
  };
  await putApiKey(key);
  return { value, key };
}

export async function keysOfEmail(email: string): Promise<ApiKeyRecord[]> {
  const userId = await findUserIdByEmail(email.trim().toLowerCase());
  return userId ? listApiKeys(userId) : [];
}

/** Revokes by key id or by mask (`phx_...abcd`); returns how many keys were removed. */
export async function revokeApiKey(email: string, idOrMask: string): Promise<number> {
  const matching = (await keysOfEmail(email)).filter((k) => k.id === idOrMask || k.mask_value === idOrMask);
  await Promise.all(matching.map((k) => deleteApiKey(k.secure_value)));
  return matching.length;
}
