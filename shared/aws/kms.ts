import { JsonServiceClient, type CallOptions, type JsonServiceOptions } from './http.ts';

/**
 * KMS's two calls that wrap and unwrap export secrets' data keys, with @aws-sdk/client-kms's command
 * names and shapes, over AWS JSON 1.1 (shared/aws/http.ts); blobs travel as base64.
 */
interface Metadata {
  $metadata: { httpStatusCode?: number; requestId?: string };
}
export interface GenerateDataKeyCommandInput {
  KeyId: string;
  KeySpec?: 'AES_256' | 'AES_128';
  EncryptionContext?: Record<string, string>;
}
export interface GenerateDataKeyCommandOutput extends Metadata {
  KeyId?: string;
  Plaintext?: Uint8Array;
  CiphertextBlob?: Uint8Array;
}
export interface DecryptCommandInput {
  CiphertextBlob: Uint8Array;
  EncryptionContext?: Record<string, string>;
  KeyId?: string;
}
export interface DecryptCommandOutput extends Metadata {
  KeyId?: string;
  Plaintext?: Uint8Array;
}

export abstract class KmsCommand<I, O> {
  declare readonly _output: O;
  abstract readonly operation: string;
  constructor(readonly input: I) {}
}
export class GenerateDataKeyCommand extends KmsCommand<GenerateDataKeyCommandInput, GenerateDataKeyCommandOutput> {
  readonly operation = 'GenerateDataKey';
}
export class DecryptCommand extends KmsCommand<DecryptCommandInput, DecryptCommandOutput> {
  readonly operation = 'Decrypt';
}

const BLOBS = ['CiphertextBlob', 'Plaintext'] as const;

export class KMSClient {
  readonly http: JsonServiceClient;
  constructor(readonly config: Omit<JsonServiceOptions, 'service' | 'targetPrefix' | 'jsonVersion'>) {
    this.http = new JsonServiceClient({ ...config, service: 'kms', targetPrefix: 'TrentService', jsonVersion: '1.1' });
  }

  async send<I, O>(command: KmsCommand<I, O>, options?: CallOptions): Promise<O> {
    const input: Record<string, unknown> = { ...(command.input as Record<string, unknown>) };
    for (const field of BLOBS) {
      const b = input[field] as Uint8Array | undefined;
      if (b) input[field] = Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64');
    }
    const out: Record<string, unknown> = await this.http.call(command.operation, input, options);
    for (const field of BLOBS) {
      if (typeof out[field] !== 'string') continue;
      const b = Buffer.from(out[field] as string, 'base64');
      out[field] = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
    }
    return { ...out, $metadata: { httpStatusCode: 200 } } as O;
  }
}
