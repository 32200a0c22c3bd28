import { createUser, findUserIdByEmail, getUser, type UserRecord } from '../db/users.ts';
import { nowIso } from '../clock.ts';
import { uuidv7 } from '../ids.ts';
import { TRANSIENT, retryTransient } from '../retry.ts';

/** The user with this e-mail, created on first use (keys are issued to e-mails by the CLI). */
export async function ensureUser(email: string): Promise<UserRecord> {
  const normalized = email.trim().toLowerCase();
  return retryTransient(
    `User ${normalized}`,
    async () => {
      const existingId = await findUserIdByEmail(normalized);
      const existing = existingId && (await getUser(existingId));
      if (existing) return existing;
      const user: UserRecord = {
        id: uuidv7(),
        email: normalized,
        first_name: normalized.split('@')[0] ?? '',
        created_at: nowIso(),
      };
      return (await createUser(user)) ? user : TRANSIENT;
    },
    { attempts: 3, gaveUp: () => new Error(`could not create or read user ${normalized}`) },
  );
}
