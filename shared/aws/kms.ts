import { KMSClient } from '@aws-sdk/client-kms';
import { AWS_CLIENTS } from '../config.ts';
import { clientOptions, traced } from './options.ts';

/** KMS: one @aws-sdk/client-kms client per process (AWS_CLIENTS.kms), which wraps and unwraps export secrets' data keys. */
export { DecryptCommand, GenerateDataKeyCommand } from '@aws-sdk/client-kms';

let client: KMSClient | undefined;

export const kms = (): KMSClient => (client ??= traced(new KMSClient(clientOptions(AWS_CLIENTS.kms))));
