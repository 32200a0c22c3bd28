/**
 * Where the lake's objects live: the lake bucket (deployed, signed with the function's own
 * credentials) or a folder under DATA_DIR (the local runtime). Same keys either way
 * (shared/lake/layout.ts); `uri` is what a reader is given (s3://… for Athena, a path for DuckDB).
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { config } from '../config.ts';
import { deleteObject, getObjectText, putObject, type S3Destination } from '../exports/s3.ts';
import { environmentCredentials } from '../aws/sigv4.ts';

export interface LakeStore {
  uri(key: string): string;
  put(key: string, body: Uint8Array, contentType: string): Promise<void>;
  getText(key: string): Promise<string | undefined>;
  /** The key of a URI this store handed out, else undefined (never deletes what is not its own). */
  keyOf(uri: string): string | undefined;
  delete(key: string): Promise<void>;
}

export function folderStore(root: string): LakeStore {
  const base = resolve(root);
  const path = (key: string) => {
    const p = resolve(base, key);
    if (!p.startsWith(base + sep)) throw new Error(`lake: key outside the lake folder: ${key}`);
    return p;
  };
  return {
    uri: path,
    async put(key, body) {
      const target = path(key);
      await mkdir(dirname(target), { recursive: true });
      // Written aside, then renamed: a reader sees the old object or the whole new one (as S3's PutObject).
      const aside = join(dirname(target), `.${randomUUID()}.tmp`);
      await writeFile(aside, body);
      await rename(aside, target);
    },
    async getText(key) {
      try {
        return await readFile(path(key), 'utf8');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw error;
      }
    },
    keyOf: (uri) =>
      uri.startsWith(base + sep)
        ? uri
            .slice(base.length + 1)
            .split(sep)
            .join('/')
        : undefined,
    delete: (key) => rm(path(key), { force: true }),
  };
}

export function bucketStore(bucket: string, region: string): LakeStore {
  const destination = async (): Promise<S3Destination> => {
    const c = environmentCredentials();
    return {
      bucket_name: bucket,
      region,
      aws_access_key_id: c.accessKeyId,
      aws_secret_access_key: c.secretAccessKey,
      aws_session_token: c.sessionToken ?? null,
    };
  };
  const prefix = `s3://${bucket}/`;
  return {
    uri: (key) => `${prefix}${key}`,
    put: async (key, body, contentType) => putObject(await destination(), key, Buffer.from(body), contentType),
    getText: async (key) => getObjectText(await destination(), key),
    keyOf: (uri) => (uri.startsWith(prefix) ? uri.slice(prefix.length) : undefined),
    delete: async (key) => deleteObject(await destination(), key),
  };
}

/** The configured lake, or undefined where this stage has none. */
export function lakeStore(): LakeStore | undefined {
  const lake = config().lake;
  if (!lake) return undefined;
  return 'bucket' in lake ? bucketStore(lake.bucket, lake.region) : folderStore(lake.dir);
}
