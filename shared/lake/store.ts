/**
 * Where the lake's objects live: the lake bucket (deployed, through the S3 client with the function's
 * own role: shared/aws/s3.ts) or a folder under DATA_DIR (the local runtime). Same keys either way
 * (shared/lake/layout.ts); `uri` is what a reader is given (s3://… for Athena, a path for DuckDB).
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { config } from '../config.ts';

/** The S3 client and its commands, loaded on the lake's first object call: most requests never make one (infra/build.ts). */
const loadS3 = () => import('../aws/s3.ts');

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

export function bucketStore(bucket: string): LakeStore {
  const prefix = `s3://${bucket}/`;
  return {
    uri: (key) => `${prefix}${key}`,
    async put(key, body, contentType) {
      const { s3, PutObjectCommand } = await loadS3();
      await s3().send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentType: contentType }));
    },
    async getText(key) {
      const { s3, GetObjectCommand, NoSuchKey } = await loadS3();
      try {
        const out = await s3().send(new GetObjectCommand({ Bucket: bucket, Key: key }));
        return (await out.Body?.transformToString('utf8')) ?? '';
      } catch (error) {
        if (error instanceof NoSuchKey) return undefined;
        throw error;
      }
    },
    keyOf: (uri) => (uri.startsWith(prefix) ? uri.slice(prefix.length) : undefined),
    // S3 answers 204 for a key that is already gone.
    async delete(key) {
      const { s3, DeleteObjectCommand } = await loadS3();
      await s3().send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    },
  };
}

/** The configured lake, or undefined where this stage has none. */
export function lakeStore(): LakeStore | undefined {
  const lake = config().lake;
  if (!lake) return undefined;
  return 'bucket' in lake ? bucketStore(lake.bucket) : folderStore(lake.dir);
}
