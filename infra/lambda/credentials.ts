/**
 * Bundled in place of `@aws-sdk/credential-provider-node` (see infra/build.ts). Lambda always hands a
 * function its role's credentials in environment variables, so the SDK's default chain (SSO, INI
 * files, STS web identity, the instance metadata service: ~80 KB minified, half of it the SSO/STS
 * clients) is dead weight in a bundle and cold-start time in every function.
 */
import { fromEnv } from '@aws-sdk/credential-provider-env';

export const defaultProvider = (init?: Parameters<typeof fromEnv>[0]) => fromEnv(init);
