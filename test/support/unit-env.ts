import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configureLocalEnv } from '../../infra/local/env.ts';
import { loadRegexEngine } from '../../shared/regex.ts';

// Unit tests run with no emulator: the configuration a local function gets, with endpoints where
// nothing listens, so a unit test that reached for a table or a queue fails fast instead of passing.
const NOWHERE = 'http://127.0.0.1:9';
configureLocalEnv({
  tableName: 'analytics-unit',
  dynamodb: NOWHERE,
  sqs: NOWHERE,
  s3: NOWHERE,
  dataDir: mkdtempSync(join(tmpdir(), 'analytics-unit-')),
});
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
process.env.AWS_ENDPOINT_URL_STS ??= NOWHERE;

// The HTTP and worker pipelines load re2js before a handler runs (shared/preload.ts); unit tests call
// the filter and HogQL code directly, so they load it once here.
await loadRegexEngine();
