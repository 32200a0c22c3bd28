/**
 * What posthog-js asks its api_host for besides capture: the project's remote config
 * (`/array/<token>/config`, `/array/<token>/config.js`) and feature flags (`/flags`, legacy `/decide`).
 * This service has no feature flags, session recordings, surveys or site apps: the answers say so in
 * the shapes the SDK reads (@posthog/browser-common `RemoteConfig` and `FlagsResponse`), so it never
 * reports an error and switches on what the service supports (gzip, autocapture).
 */
import { decodeCaptureRequest, type CaptureRequestInput } from '../capture/decode.ts';
import { now } from '../clock.ts';
import { getProject, type ProjectRecord } from '../db/projects.ts';
import { NotAuthenticated, NotFound, ValidationError } from '../errors.ts';
import { uuidv7 } from '../ids.ts';
import { projectOfToken as projectOfPointer } from './project-tokens.ts';

/** Capture's own limit on tokens: a longer one cannot name a project. */
const MAX_TOKEN_LENGTH = 200;

/**
 * A flags body is a token, a distinct id and a few person properties: 1 MiB, as every JSON route,
 * compressed or not (the handler refuses a larger body before this; decoding refuses one that inflates past it).
 */
const MAX_FLAGS_BODY_BYTES = 1024 * 1024;

const INVALID_TOKEN = 'Project API key invalid. You can find your project API key in your project settings.';

/** Checked before anything is read; an unknown token then costs one cached lookup (shared/domain/project-tokens.ts). */
async function projectOfToken(token: string): Promise<ProjectRecord | undefined> {
  if (token === '' || token.length > MAX_TOKEN_LENGTH || token.startsWith('phx_')) return undefined;
  const pointer = await projectOfPointer(token);
  return pointer ? getProject(pointer.organization_id, pointer.project_id) : undefined;
}

/**
 * PostHog's remote config (posthog `RemoteConfig.build_config`), camelCase as posthog-js 1.2xx+ reads
 * it. `autocapture_opt_out` is the project's setting; the SDK turns autocapture on only once it has
 * seen it false here.
 */
export function remoteConfigOf(project: Pick<ProjectRecord, 'api_token' | 'autocapture_opt_out'>) {
  return {
    token: project.api_token,
    supportedCompression: ['gzip', 'gzip-js'],
    hasFeatureFlags: false,
    captureDeadClicks: false,
    capturePerformance: false,
    autocapture_opt_out: project.autocapture_opt_out ?? false,
    autocaptureExceptions: false,
    // Where the SDK sends events: capture's newest path.
    analytics: { endpoint: '/i/v0/e/' },
    elementsChainAsString: true,
    errorTracking: { autocaptureExceptions: false, suppressionRules: [] },
    logs: { captureConsoleLogs: false },
    sessionRecording: false,
    heatmaps: false,
    conversations: false,
    surveys: false,
    productTours: false,
    // PostHog's default for every project created since 2024: person profiles for identified users only.
    defaultIdentifiedOnly: true,
    siteApps: [],
  };
}

export type RemoteConfig = ReturnType<typeof remoteConfigOf>;

/** `/array/<token>/config`: 404 for a token that names no project, as PostHog answers. */
export async function remoteConfig(token: string): Promise<RemoteConfig> {
  const project = await projectOfToken(token);
  if (!project) throw new NotFound();
  return remoteConfigOf(project);
}

/**
 * `/array/<token>/config.js`: the script posthog-js loads before falling back to the JSON. The SDK
 * reads `window._POSTHOG_REMOTE_CONFIG[token].config` (posthog-js `RemoteConfigLoader.remoteConfig`).
 * JSON is valid JavaScript; `<` is escaped so the text can never close a script element.
 */
export async function remoteConfigScript(token: string): Promise<string> {
  const config = await remoteConfig(token);
  const literal = (value: unknown) => JSON.stringify(value).replace(/</g, '\\u003c');
  return [
    '(function() {',
    '  window._POSTHOG_REMOTE_CONFIG = window._POSTHOG_REMOTE_CONFIG || {};',
    `  window._POSTHOG_REMOTE_CONFIG[${literal(config.token)}] = { config: ${literal(config)}, siteApps: [] };`,
    '})();',
    '',
  ].join('\n');
}

/** The project token of a flags request: in the body (any encoding capture accepts), else the query. */
function flagsToken(input: CaptureRequestInput): string {
  const hasPayload = input.body.length > 0 || input.query.data !== undefined;
  const payload = hasPayload ? decodeCaptureRequest({ ...input, maxBytes: MAX_FLAGS_BODY_BYTES }).payload : {};
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) {
    throw new ValidationError('request body must be a JSON object', null, 'invalid_payload');
  }
  const body = payload as Record<string, unknown>;
  for (const candidate of [body.token, body.api_key, body.$token, input.query.token, input.query.api_key]) {
    if (typeof candidate === 'string' && candidate !== '') return candidate;
  }
  throw new NotAuthenticated(
    'No project API key provided. You can find your project API key in your project settings.',
  );
}

async function flagsProject(input: CaptureRequestInput): Promise<ProjectRecord> {
  const project = await projectOfToken(flagsToken(input));
  if (!project) throw new NotAuthenticated(INVALID_TOKEN);
  return project;
}

/** No flags, in the current `/flags?v=2` shape; `featureFlags`/`featureFlagPayloads` for SDKs that read the v1 fields. */
function noFlags() {
  return {
    flags: {},
    featureFlags: {},
    featureFlagPayloads: {},
    errorsWhileComputingFlags: false,
    quotaLimited: [],
    requestId: uuidv7(),
    evaluatedAt: now().getTime(),
  };
}

/** `/flags`: no flags; with `config=true` (as PostHog's flags service) the remote config too. */
export async function flags(input: CaptureRequestInput) {
  const project = await flagsProject(input);
  return input.query.config === 'true' ? { ...remoteConfigOf(project), ...noFlags() } : noFlags();
}

/**
 * `/decide` (posthog-js before /flags, other older SDKs): no flags plus the remote config they read
 * from it, with the fields only decide had. Before v=2 `featureFlags` was a list of enabled keys.
 */
export async function decide(input: CaptureRequestInput) {
  const project = await flagsProject(input);
  const version = Number(input.query.v ?? '1');
  return {
    ...remoteConfigOf(project),
    config: { enable_collect_everything: true },
    toolbarParams: {},
    isAuthenticated: false,
    ...noFlags(),
    ...(version >= 2 ? {} : { featureFlags: [] }),
  };
}
