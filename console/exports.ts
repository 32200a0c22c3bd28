import { api, ApiError } from './api.ts';
import { watch } from './poll.ts';
import type { Ctx } from './main.ts';
import { clear, h, select, showFieldError, text } from './dom.ts';

interface Run {
  id: string;
  status: string;
  records_completed: number | null;
  records_failed?: number;
  latest_error: string | null;
  data_interval_start: string | null;
  data_interval_end: string;
  created_at: string;
}
interface Export {
  id: string;
  name: string;
  model: string;
  interval: string;
  paused: boolean;
  start_at: string | null;
  end_at: string | null;
  destination: { type: string; config: Record<string, unknown> };
  latest_runs: Run[];
}
interface Backfill {
  id: string;
  status: string;
  start_at: string | null;
  end_at: string;
  total_records_count: number;
  progress: { total_runs: number; finished_runs: number; progress: number };
}

const INTERVALS = [
  ['hour', 'Hourly'],
  ['day', 'Daily'],
  ['week', 'Weekly'],
  ['every 5 minutes', 'Every 5 minutes'],
  ['every 15 minutes', 'Every 15 minutes'],
] as const;
const MODELS = [
  ['events', 'Events'],
  ['persons', 'Persons'],
] as const;
const TYPES = [
  ['S3', 'S3'],
  ['S3Compatible', 'S3-compatible'],
] as const;
const FORMATS = [
  ['JSONLines', 'JSON lines'],
  ['Parquet', 'Parquet'],
  ['CSV', 'CSV'],
] as const;
const COMPRESSIONS = [
  ['', 'None'],
  ['gzip', 'gzip'],
  ['brotli', 'brotli'],
  ['zstd', 'zstd'],
  ['lz4', 'lz4'],
  ['snappy', 'snappy'],
] as const;
/** Destination settings the form edits, by the API's attr (`destination__config__<name>`). */
const CONFIG_FIELDS = [
  ['bucket_name', 'Bucket'],
  ['region', 'Region'],
  ['prefix', 'Key prefix'],
  ['endpoint_url', 'Endpoint URL (S3-compatible only)'],
  ['aws_access_key_id', 'Access key id'],
  ['aws_secret_access_key', 'Secret access key'],
] as const;
/** A new export's starting values: PostHog's own defaults. */
const DEFAULTS: Record<string, string> = { region: 'us-east-1', prefix: 'posthog-events/{year}/{month}/{day}' };
const SECRETS = new Set(['aws_access_key_id', 'aws_secret_access_key']);
/** What the last action did, shown once when the view is drawn again after it. */
let flash = '';
const FAILED = new Set(['Failed', 'FailedRetryable', 'FailedBilling', 'Terminated', 'TimedOut']);
/** A backfill in these states still has runs to finish: its row is kept up to date. */
const UNSETTLED = new Set(['Starting', 'Running']);

/** What a glance at the list should say: paused, failing (the newest run failed), healthy, or not run yet. */
export function health(e: Pick<Export, 'paused' | 'latest_runs'>): { text: string; bad: boolean } {
  if (e.paused) return { text: 'Paused', bad: false };
  const last = e.latest_runs[0];
  if (!last) return { text: 'No runs yet', bad: false };
  if (FAILED.has(last.status)) return { text: 'Failing', bad: true };
  return { text: 'Healthy', bad: false };
}

const badge = (status: string) =>
  h(
    'span',
    { class: `badge ${FAILED.has(status) ? 'bad' : status === 'Completed' ? 'good' : ''}` },
    status === 'FailedRetryable' ? 'Failed (retryable)' : status,
  );

/** One page, three views by URL: the list, an export (`export=id`), and the form (`edit=new|id`). */
export async function exportsPage(body: HTMLElement, ctx: Ctx): Promise<void> {
  const base = `/api/organizations/${ctx.orgId}/batch_exports/`;
  const edit = ctx.params.get('edit');
  const id = ctx.params.get('export');
  if (edit) return exportForm(body, ctx, base, edit === 'new' ? null : await api<Export>('GET', `${base}${edit}/`));
  if (id) return exportView(body, ctx, base, await api<Export>('GET', `${base}${id}/`));
  const list = await api<{ results: Export[] }>('GET', `${base}?limit=100`);
  const rows = list.results.map((e) => {
    const state = health(e);
    return h(
      'tr',
      {},
      h(
        'th',
        { scope: 'row' },
        h(
          'a',
          { href: `?${new URLSearchParams({ page: 'exports', project: String(ctx.projectId), export: e.id })}` },
          e.name,
        ),
      ),
      h('td', {}, `${e.destination.type}: ${text(e.destination.config.bucket_name ?? '')}`),
      h('td', {}, e.interval),
      h('td', {}, ...e.latest_runs.slice(0, 5).map((r) => badge(r.status))),
      h('td', { class: 'health' }, h('span', { class: `badge ${state.bad ? 'bad' : ''}` }, state.text)),
    );
  });
  const table = h(
    'table',
    { id: 'exports-table' },
    h('caption', {}, `${list.results.length} batch exports`),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ...['Name', 'Destination', 'Interval', 'Last runs', 'Health'].map((c) => h('th', { scope: 'col' }, c)),
      ),
    ),
    h('tbody', {}, ...rows),
  );
  clear(
    body,
    h('h1', {}, 'Batch exports'),
    h(
      'p',
      {},
      h(
        'a',
        { href: `?${new URLSearchParams({ page: 'exports', project: String(ctx.projectId), edit: 'new' })}` },
        'New export',
      ),
    ),
    list.results.length
      ? h('div', { class: 'scroll', tabindex: 0, role: 'region', 'aria-label': 'Batch exports' }, table)
      : h('p', {}, 'No batch exports yet.'),
  );
}

function labelled(label: string, control: HTMLElement, id: string): HTMLElement {
  control.id = id;
  return h(
    'div',
    { class: 'field' },
    h('label', { for: id }, label),
    control,
    h('p', { class: 'error', id: `${id}-error` }),
  );
}

function exportForm(body: HTMLElement, ctx: Ctx, base: string, current: Export | null): void {
  const cfg = current?.destination.config ?? {};
  const name = h('input', { value: current?.name ?? '', autocomplete: 'off' });
  const interval = select(INTERVALS, current?.interval ?? 'hour');
  const model = select(MODELS, current?.model ?? 'events');
  const type = select(TYPES, current?.destination.type === 'S3Compatible' ? 'S3Compatible' : 'S3');
  const format = select(FORMATS, text(cfg.file_format ?? 'JSONLines'));
  const compression = select(COMPRESSIONS, text(cfg.compression ?? ''));
  const inputs = new Map<string, HTMLInputElement>();
  for (const [key] of CONFIG_FIELDS) {
    const secret = SECRETS.has(key);
    inputs.set(
      key,
      h('input', {
        value: secret ? '' : text(cfg[key] ?? DEFAULTS[key] ?? ''),
        autocomplete: 'off',
        type: key === 'aws_secret_access_key' ? 'password' : 'text',
        placeholder: secret && current ? 'unchanged' : undefined,
      }),
    );
  }
  const startAt = h('input', {
    value: current?.start_at ?? '',
    placeholder: '2024-05-01T00:00:00Z',
    autocomplete: 'off',
  });
  const endAt = h('input', { value: current?.end_at ?? '', placeholder: 'optional', autocomplete: 'off' });
  const form = h(
    'form',
    { class: 'stack', id: 'export-form' },
    labelled('Name', name, 'bx-name'),
    labelled('Interval', interval, 'bx-interval'),
    labelled('Model', model, 'bx-model'),
    h(
      'fieldset',
      {},
      h('legend', {}, 'Destination'),
      labelled('Destination type', type, 'bx-destination__type'),
      ...CONFIG_FIELDS.map(([key, label]) =>
        labelled(label, inputs.get(key) as HTMLInputElement, `bx-destination__config__${key}`),
      ),
      labelled('File format', format, 'bx-destination__config__file_format'),
      labelled('Compression', compression, 'bx-destination__config__compression'),
      h('p', { class: 'error', id: 'bx-destination__config-error', role: 'alert' }),
    ),
    labelled('Start at (ISO 8601, optional)', startAt, 'bx-start_at'),
    labelled('End at (ISO 8601, optional)', endAt, 'bx-end_at'),
    h('div', { class: 'row' }, h('button', { type: 'submit' }, current ? 'Save export' : 'Create export')),
    h('p', { class: 'error', id: 'bx-form-error', role: 'alert' }),
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void ctx.run(() => saveExport());
  });
  const saveExport = async () => {
    const config: Record<string, unknown> = { file_format: format.value, compression: compression.value || null };
    for (const [key, input] of inputs) {
      const v = input.value.trim();
      // Blank secrets on an edit keep the stored ones; other blanks are left out.
      if (v) config[key] = v;
    }
    const payload = {
      name: name.value,
      interval: interval.value,
      model: model.value,
      destination: { type: type.value, config },
      start_at: startAt.value.trim() || null,
      end_at: endAt.value.trim() || null,
    };
    try {
      const saved = await api<Export>(current ? 'PATCH' : 'POST', current ? `${base}${current.id}/` : base, payload);
      ctx.navigate({ page: 'exports', export: saved.id });
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      showFieldError(form, 'bx-', err.attr, err.detail);
    }
  };
  clear(body, h('h1', {}, current ? `Edit ${current.name}` : 'New batch export'), form);
}

async function exportView(body: HTMLElement, ctx: Ctx, base: string, e: Export): Promise<void> {
  const at = `${base}${e.id}/`;
  const [runs, backfills, logs] = await Promise.all([
    api<{ results: Run[] }>('GET', `${at}runs/?limit=50`),
    api<{ results: Backfill[] }>('GET', `${at}backfills/?limit=20`),
    api<{ results: { timestamp: string; level: string; message: string }[] }>('GET', `${at}logs/?limit=50`),
  ]);
  const message = h('p', { role: 'status', id: 'export-message' }, flash);
  flash = '';
  const act = (label: string, path: string, done: string) => {
    const b = h('button', { type: 'button' }, label);
    b.addEventListener('click', () =>
      ctx.run(async () => {
        b.disabled = true;
        try {
          await api('POST', path);
          flash = done;
          await ctx.refresh();
        } catch (err) {
          if (!(err instanceof ApiError)) throw err;
          message.textContent = err.detail;
          b.disabled = false;
        }
      }),
    );
    return b;
  };
  const state = health({ paused: e.paused, latest_runs: runs.results });
  const backfillStart = h('input', { placeholder: '2024-05-01T00:00:00Z', autocomplete: 'off' });
  const backfillEnd = h('input', { placeholder: '2024-05-02T00:00:00Z', autocomplete: 'off' });
  const backfillForm = h(
    'form',
    { class: 'trend-form', id: 'backfill-form' },
    labelled('Backfill from', backfillStart, 'bf-start_at'),
    labelled('Backfill to', backfillEnd, 'bf-end_at'),
    h(
      'div',
      { class: 'field' },
      h('button', { type: 'submit' }, 'Start backfill'),
      h('p', { class: 'error', id: 'bf-form-error', role: 'alert' }),
    ),
  );
  backfillForm.addEventListener('submit', (ev) => {
    ev.preventDefault();
    void ctx.run(async () => {
      try {
        await api('POST', `${at}backfills/`, {
          start_at: backfillStart.value.trim() || null,
          end_at: backfillEnd.value.trim(),
        });
        flash = 'Backfill started.';
        await ctx.refresh();
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        showFieldError(backfillForm, 'bf-', err.attr, err.detail);
      }
    });
  });
  const backfillRows = backfills.results.map((b) => backfillRow(b, at, act, message));
  const runRows = runs.results.map((r) =>
    h(
      'tr',
      {},
      h('td', {}, badge(r.status)),
      h('td', {}, `${r.data_interval_start ?? ''} → ${r.data_interval_end}`),
      h('td', { class: 'records' }, r.records_completed ?? 0),
      h('td', {}, r.latest_error ?? ''),
      h(
        'td',
        {},
        FAILED.has(r.status) || r.status === 'Completed' || r.status === 'Cancelled'
          ? act('Retry', `${at}runs/${r.id}/retry/`, 'Retry started as a backfill of the run.')
          : act('Cancel', `${at}runs/${r.id}/cancel/`, 'Run cancelled.'),
      ),
    ),
  );
  const tableOf = (id: string, caption: string, cols: string[], rows: HTMLElement[]) =>
    rows.length
      ? h(
          'div',
          { class: 'scroll', tabindex: 0, role: 'region', 'aria-label': caption },
          h(
            'table',
            { id },
            h('caption', {}, caption),
            h('thead', {}, h('tr', {}, ...cols.map((c) => h('th', { scope: 'col' }, c)))),
            h('tbody', {}, ...rows),
          ),
        )
      : h('p', {}, `No ${caption.toLowerCase()} yet.`);
  const refresh = h('button', { type: 'button' }, 'Refresh');
  refresh.addEventListener('click', () => void ctx.refresh());
  clear(
    body,
    h(
      'p',
      {},
      h(
        'a',
        { href: `?${new URLSearchParams({ page: 'exports', project: String(ctx.projectId) })}` },
        '← All batch exports',
      ),
    ),
    h('h1', {}, e.name),
    h(
      'p',
      {},
      `${e.destination.type}: ${text(e.destination.config.bucket_name ?? '')} · ${e.interval} · ${e.model} · `,
      h('span', { class: `badge ${state.bad ? 'bad' : ''}`, id: 'export-health' }, state.text),
    ),
    h(
      'div',
      { class: 'row' },
      e.paused ? act('Unpause', `${at}unpause/`, 'Unpaused.') : act('Pause', `${at}pause/`, 'Paused.'),
      h(
        'a',
        { href: `?${new URLSearchParams({ page: 'exports', project: String(ctx.projectId), edit: e.id })}` },
        'Edit',
      ),
      refresh,
    ),
    message,
    h('h2', {}, 'Backfill'),
    backfillForm,
    tableOf('backfills-table', 'Backfills', ['Status', 'Range', 'Progress', 'Records', ''], backfillRows),
    h('h2', {}, 'Runs'),
    tableOf('runs-table', 'Runs', ['Status', 'Window', 'Records', 'Error', ''], runRows),
    h('h2', {}, 'Logs'),
    logs.results.length
      ? h(
          'ul',
          { id: 'export-logs' },
          ...logs.results.map((l) => h('li', {}, `${l.timestamp} ${l.level} ${l.message}`)),
        )
      : h('p', {}, 'No logs yet.'),
  );
}

/**
 * A backfill's row. While it is unsettled its progress is fetched again (`GET .../backfills/:id/`),
 * waiting longer each time (console/poll.ts), and the row is updated in place, so a form being
 * filled in on the page is left alone; the watch ends when the backfill settles or the row leaves the page.
 */
function backfillRow(
  b: Backfill,
  at: string,
  act: (label: string, path: string, done: string) => HTMLButtonElement,
  message: HTMLElement,
): HTMLElement {
  const status = h('td', {}, badge(b.status));
  const bar = h('progress', { 'aria-label': `Backfill ${b.id} progress` });
  const counts = document.createTextNode('');
  const records = h('td', {});
  const actions = h(
    'td',
    {},
    UNSETTLED.has(b.status) ? act('Cancel', `${at}backfills/${b.id}/cancel/`, 'Backfill cancelled.') : '',
  );
  const row = h(
    'tr',
    {},
    status,
    h('td', {}, `${b.start_at ?? 'beginning'} → ${b.end_at}`),
    h('td', {}, bar, counts),
    records,
    actions,
  );
  // Updated in place: a Cancel button that has the keyboard focus keeps it while the backfill runs.
  let shown = b.status;
  const show = (now: Backfill) => {
    if (now.status !== shown) clear(status, badge((shown = now.status)));
    bar.max = Math.max(1, now.progress.total_runs);
    bar.value = now.progress.finished_runs;
    counts.textContent = ` ${now.progress.finished_runs} / ${now.progress.total_runs} runs`;
    records.textContent = String(now.total_records_count);
    if (!UNSETTLED.has(now.status)) actions.replaceChildren();
  };
  show(b);
  if (UNSETTLED.has(b.status))
    watch({
      alive: () => row.isConnected,
      paused: () => document.hidden,
      check: async () => {
        const now = await api<Backfill>('GET', `${at}backfills/${encodeURIComponent(b.id)}/`);
        if (!row.isConnected) return true;
        show(now);
        if (UNSETTLED.has(now.status)) return false;
        message.textContent = `Backfill ${now.status.toLowerCase()}: ${now.progress.finished_runs} of ${now.progress.total_runs} runs finished.`;
        return true;
      },
      failed: (error) => {
        message.textContent = `Backfill progress is not updating: ${error instanceof ApiError ? error.detail : String(error)}`;
      },
    });
  return row;
}
