import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { link, mkdir, readFile, unlink, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { config, ConfigError, ENV } from '../config.ts';

/**
 * Envelope encryption of batch-export destination secrets. Each export gets its own AES-256 data key;
 * the secrets are sealed with AES-256-GCM under it, and the data key is kept only wrapped: by KMS in
 * a deployed stage (GenerateDataKey / Decrypt, the key created by the CDK stack), by a local key file
 * under DATA_DIR in the local runtime and tests. The encryption context (organization and export id)
 * binds a sealed box to its export: copied into another export's item, it does not open.
 */
export interface SealedSecrets {
  v: 1;
  /** Who wraps the data key. */
  wrap: 'kms' | 'local';
  /** The wrapped data key (KMS ciphertext blob, or iv|tag|ciphertext under the local key), base64. */
  key: string;
  iv: string;
  tag: string;
  data: string;
}

export interface SecretsContext {
  organization_id: string;
  batch_export_id: string;
}

const aad = (context: SecretsContext) =>
  Buffer.from(JSON.stringify({ organization_id: context.organization_id, batch_export_id: context.batch_export_id }));

function gcmSeal(key: Buffer, plain: Buffer, context: SecretsContext) {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv).setAAD(aad(context));
  const data = Buffer.concat([cipher.update(plain), cipher.final()]);
  return { iv, tag: cipher.getAuthTag(), data };
}

function gcmOpen(key: Buffer, box: { iv: Buffer; tag: Buffer; data: Buffer }, context: SecretsContext): Buffer {
  const decipher = createDecipheriv('aes-256-gcm', key, box.iv).setAAD(aad(context)).setAuthTag(box.tag);
  return Buffer.concat([decipher.update(box.data), decipher.final()]);
}

/** The local runtime's key: 32 random bytes in a 0600 file, made on first use (atomically: link fails if another process won). */
async function localKey(): Promise<Buffer> {
  const { runtime, localSecretsKeyFile: file } = config();
  if (runtime !== 'local')
    throw new ConfigError(
      `${ENV.exportSecretsKmsKeyId} is not set: a deployed stage seals export secrets with KMS only`,
    );
  try {
    return await readKey(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  const draft = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  await writeFile(draft, randomBytes(32), { mode: 0o600, flag: 'wx' });
  try {
    await link(draft, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    await unlink(draft);
  }
  return readKey(file);
}

async function readKey(file: string): Promise<Buffer> {
  const key = await readFile(file);
  if (key.length !== 32) throw new ConfigError(`${file} must hold a 32-byte key`);
  return key;
}

export async function sealSecrets(secrets: Record<string, string>, context: SecretsContext): Promise<SealedSecrets> {
  const keyId = config().exportSecretsKmsKeyId;
  let dataKey: Buffer;
  let wrapped: Buffer;
  if (keyId) {
    // The KMS client is loaded on first use: only functions that seal or open an export's secrets with KMS make one.
    const { kms, GenerateDataKeyCommand } = await import('../aws/kms.ts');
    const out = await kms().send(
      new GenerateDataKeyCommand({ KeyId: keyId, KeySpec: 'AES_256', EncryptionContext: { ...context } }),
    );
    dataKey = Buffer.from(out.Plaintext!);
    wrapped = Buffer.from(out.CiphertextBlob!);
  } else {
    dataKey = randomBytes(32);
    const box = gcmSeal(await localKey(), dataKey, context);
    wrapped = Buffer.concat([box.iv, box.tag, box.data]);
  }
  const box = gcmSeal(dataKey, Buffer.from(JSON.stringify(secrets)), context);
  dataKey.fill(0);
  const b64 = (b: Buffer) => b.toString('base64');
  return {
    v: 1,
    wrap: keyId ? 'kms' : 'local',
    key: b64(wrapped),
    iv: b64(box.iv),
    tag: b64(box.tag),
    data: b64(box.data),
  };
}

export async function openSecrets(sealed: SealedSecrets, context: SecretsContext): Promise<Record<string, string>> {
  const wrapped = Buffer.from(sealed.key, 'base64');
  let dataKey: Buffer;
  if (sealed.wrap === 'kms') {
    const keyId = config().exportSecretsKmsKeyId;
    const { kms, DecryptCommand } = await import('../aws/kms.ts');
    const out = await kms().send(
      new DecryptCommand({
        CiphertextBlob: wrapped,
        EncryptionContext: { ...context },
        ...(keyId ? { KeyId: keyId } : {}),
      }),
    );
    dataKey = Buffer.from(out.Plaintext!);
  } else {
    dataKey = gcmOpen(
      await localKey(),
      { iv: wrapped.subarray(0, 12), tag: wrapped.subarray(12, 28), data: wrapped.subarray(28) },
      context,
    );
  }
  const plain = gcmOpen(
    dataKey,
    {
      iv: Buffer.from(sealed.iv, 'base64'),
      tag: Buffer.from(sealed.tag, 'base64'),
      data: Buffer.from(sealed.data, 'base64'),
    },
    context,
  );
  dataKey.fill(0);
  return JSON.parse(plain.toString('utf8')) as Record<string, string>;
}
