import { ApiError, api, runQuery } from './api.ts';
import type { Ctx } from './main.ts';
import { clear, h, select, text } from './dom.ts';

export interface Person {
  id: string;
  name?: string;
  distinct_ids: string[];
  properties: Record<string, unknown>;
  created_at: string;
}

/** Persons with search and PostHog's paging (`next`); a person's properties on the row. */
export async function personsPage(body: HTMLElement, ctx: Ctx): Promise<void> {
  const id = ctx.params.get('person');
  if (id) return personView(body, ctx, id);
  const search = h('input', { type: 'search', id: 'person-search', value: ctx.params.get('search') ?? '' });
  const form = h(
    'form',
    { class: 'row' },
    h('label', { for: 'person-search' }, 'Search'),
    search,
    h('button', { type: 'submit' }, 'Search'),
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    ctx.navigate({ page: 'persons', ...(search.value ? { search: search.value } : {}) });
  });
  const list = h('div');
  clear(body, h('h1', {}, 'Persons'), h('p', { role: 'status', id: 'persons-message' }, flash), form, list);
  flash = '';
  const query = new URLSearchParams({ limit: '50' });
  if (ctx.params.get('search')) query.set('search', ctx.params.get('search') ?? '');
  if (ctx.params.get('offset')) query.set('offset', ctx.params.get('offset') ?? '0');
  const page = await api<{ results: Person[]; next: string | null }>(
    'GET',
    `/api/environments/${ctx.projectId}/persons/?${query}`,
  );
  const more = page.next ? h('button', { type: 'button' }, 'Next page') : null;
  more?.addEventListener('click', () => {
    const offset = new URL(page.next ?? '', location.origin).searchParams.get('offset') ?? '0';
    ctx.navigate({
      page: 'persons',
      offset,
      ...(ctx.params.get('search') ? { search: ctx.params.get('search') ?? '' } : {}),
    });
  });
  clear(list, personRows(ctx, page.results, 'persons-table', `${page.results.length} persons`), more);
}

/** The name a person is shown by: PostHog's name properties, else their first distinct id. */
const displayName = (p: Person) => text(p.properties.name ?? p.properties.email ?? p.name ?? p.distinct_ids[0]);

/** Persons as a table whose names link to each person's page (used by cohorts and trend click-through too). */
export function personRows(ctx: Ctx, persons: Person[], id: string, caption: string): HTMLElement {
  if (!persons.length) return h('p', {}, 'No persons.');
  const rows = persons.map((p) =>
    h(
      'tr',
      {},
      h(
        'td',
        {},
        h(
          'a',
          {
            href: `?${new URLSearchParams({ page: 'persons', project: String(ctx.projectId), person: String(p.id) })}`,
          },
          displayName(p),
        ),
      ),
      h('td', {}, p.distinct_ids.join(', ')),
      h('td', {}, text(p.created_at)),
      h(
        'td',
        {},
        h('details', {}, h('summary', {}, 'Properties'), h('pre', {}, JSON.stringify(p.properties, null, 2))),
      ),
    ),
  );
  return h(
    'div',
    { class: 'scroll', tabindex: 0, role: 'region', 'aria-label': caption },
    h(
      'table',
      { id },
      h('caption', {}, caption),
      h('thead', {}, h('tr', {}, ...['Name', 'Distinct ids', 'Created', ''].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, ...rows),
    ),
  );
}

export interface TimelinePoint {
  timestamp: string;
  properties: Record<string, unknown>;
  changed_keys: string[];
  source: string;
  event: string | null;
}
interface Activity {
  id: string;
  activity: string;
  user: { first_name?: string; email?: string } | null;
  created_at: string;
  detail: { changes: { action: string; field?: string; before?: unknown; after?: unknown }[] | null };
}
/** A section's answer, or what the API said instead (a key without `activity_log:read` still sees the rest). */
export type Shown<T> = { ok: T } | { detail: string };

export const shown = <T>(request: Promise<T>): Promise<Shown<T>> =>
  request.then(
    (ok) => ({ ok }),
    (e: unknown) => {
      if (e instanceof ApiError) return { detail: e.detail };
      throw e;
    },
  );

const plural = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;

/** What the last action did, shown once on the view drawn after it (the list after a delete, the person after a split). */
let flash = '';

const personsHref = (ctx: Ctx, extra: Record<string, string> = {}) =>
  `?${new URLSearchParams({ page: 'persons', project: String(ctx.projectId), ...extra })}`;

/**
 * One person: properties, distinct ids, their properties over time, what was done to them through the
 * API, their newest events; delete (optionally with all their events) and split, each confirmed first.
 */
async function personView(body: HTMLElement, ctx: Ctx, id: string): Promise<void> {
  const at = `/api/environments/${ctx.projectId}/persons/${encodeURIComponent(id)}/`;
  const p = await api<Person>('GET', at);
  const [events, timeline, activity] = await Promise.all([
    runQuery(ctx.projectId, {
      kind: 'EventsQuery',
      select: ['event', 'timestamp'],
      orderBy: ['timestamp DESC'],
      personId: String(p.id),
      after: '-90d',
      limit: 50,
    }).catch(() => ({ results: [] })),
    shown(api<{ points: TimelinePoint[] }>('GET', `${at}properties_timeline/`)),
    shown(api<{ results: Activity[]; total_count: number }>('GET', `${at}activity/?limit=50`)),
  ]);
  const props = Object.entries(p.properties).sort(([a], [b]) => a.localeCompare(b));
  const message = h('p', { role: 'status', id: 'person-message' }, flash);
  flash = '';
  clear(
    body,
    h('p', {}, h('a', { href: personsHref(ctx) }, '← All persons')),
    h('h1', { id: 'person-name' }, displayName(p)),
    h('p', {}, 'Distinct ids: ', p.distinct_ids.join(', ')),
    message,
    personActions(ctx, p, at),
    h(
      'div',
      { class: 'scroll', tabindex: 0, role: 'region', 'aria-label': 'Properties' },
      h(
        'table',
        { id: 'person-properties' },
        h('caption', {}, 'Properties'),
        h('tbody', {}, ...props.map(([k, v]) => h('tr', {}, h('th', { scope: 'row' }, k), h('td', {}, text(v))))),
      ),
    ),
    h('h2', {}, 'Properties timeline'),
    timelineTable(timeline),
    h('h2', {}, 'Activity'),
    activityTable(activity),
    h('h2', {}, 'Events'),
    h(
      'ul',
      { id: 'person-events' },
      ...(events.results ?? []).map((r: unknown[]) => h('li', {}, `${text(r[1])} ${text(r[0])}`)),
    ),
  );
}

function scrollTable(id: string, caption: string, cols: string[], rows: HTMLElement[]): HTMLElement {
  return h(
    'div',
    { class: 'scroll', tabindex: 0, role: 'region', 'aria-label': caption },
    h(
      'table',
      { id },
      h('caption', {}, caption),
      h('thead', {}, h('tr', {}, ...cols.map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, ...rows),
    ),
  );
}

/**
 * One row per recorded change, oldest first as the API lists them: each changed key with its new value
 * (or removed). A person's or a group's (`id` tells the tables apart).
 */
export function timelineTable(answer: Shown<{ points: TimelinePoint[] }>, id = 'person-timeline'): HTMLElement {
  if ('detail' in answer) return h('p', { class: 'error', id: `${id}-error` }, answer.detail);
  if (!answer.ok.points.length) return h('p', {}, 'No property changes recorded.');
  const rows = answer.ok.points.map((point) =>
    h(
      'tr',
      {},
      h('td', {}, point.timestamp),
      h('td', {}, point.event ? `${point.source}: ${point.event}` : point.source),
      h(
        'td',
        {},
        h(
          'ul',
          { class: 'plain' },
          ...point.changed_keys.map((k) =>
            h('li', {}, k in point.properties ? `${k} = ${text(point.properties[k])}` : `${k} removed`),
          ),
        ),
      ),
    ),
  );
  return scrollTable(id, plural(rows.length, 'property change'), ['When', 'Source', 'Changed'], rows);
}

/** Changes made through the API (edits, property deletes, splits), newest first, with who made them. */
function activityTable(answer: Shown<{ results: Activity[]; total_count: number }>): HTMLElement {
  if ('detail' in answer) return h('p', { class: 'error', id: 'person-activity-error' }, answer.detail);
  if (!answer.ok.results.length) return h('p', {}, 'No changes made through the API.');
  const rows = answer.ok.results.map((a) =>
    h(
      'tr',
      {},
      h('td', {}, a.created_at),
      h('td', {}, a.activity),
      h('td', {}, text(a.user?.email ?? a.user?.first_name ?? '')),
      h(
        'td',
        {},
        ...(a.detail.changes ?? []).map((c) =>
          h(
            'details',
            {},
            h('summary', {}, `${c.action} ${c.field ?? ''}`.trim()),
            h('pre', {}, `before: ${JSON.stringify(c.before, null, 2)}\nafter: ${JSON.stringify(c.after, null, 2)}`),
          ),
        ),
      ),
    ),
  );
  return scrollTable(
    'person-activity',
    `${plural(answer.ok.total_count, 'change')}${answer.ok.total_count > rows.length ? ` (newest ${rows.length} shown)` : ''}`,
    ['When', 'Change', 'By', 'Details'],
    rows,
  );
}

/**
 * A confirmation as a modal dialog: focus starts on Cancel (the safe choice), Escape closes it, and
 * the browser returns focus to the button that opened it. The API's detail is shown inside it.
 */
function confirmDialog(
  id: string,
  title: string,
  content: HTMLElement[],
  confirmLabel: string,
  onConfirm: (showError: (detail: string) => void, close: () => void) => Promise<void>,
): { dialog: HTMLDialogElement; open: HTMLButtonElement } {
  const error = h('p', { class: 'error', id: `${id}-error`, role: 'alert' });
  const confirm = h('button', { type: 'button', class: 'danger' }, confirmLabel);
  const cancel = h('button', { type: 'button', class: 'secondary', autofocus: true }, 'Cancel');
  const dialog = h(
    'dialog',
    { id, 'aria-labelledby': `${id}-title` },
    h('h2', { id: `${id}-title` }, title),
    ...content,
    h('div', { class: 'row' }, confirm, cancel),
    error,
  );
  cancel.addEventListener('click', () => dialog.close());
  confirm.addEventListener('click', () => {
    confirm.disabled = true;
    error.textContent = '';
    void onConfirm(
      (detail) => {
        error.textContent = detail;
        confirm.disabled = false;
      },
      () => dialog.close(),
    );
  });
  const open = h(
    'button',
    { type: 'button', class: 'danger', 'aria-haspopup': 'dialog' },
    `${title.replace(/\?$/, '')}…`,
  );
  // Chromium gives focus back on close, not every browser does: back to the button that opened it.
  dialog.addEventListener('close', () => {
    if (open.isConnected) open.focus();
  });
  open.addEventListener('click', () => {
    error.textContent = '';
    confirm.disabled = false;
    dialog.showModal();
  });
  return { dialog, open };
}

/** Delete (`DELETE .../persons/:id/?delete_events=`) and split (`POST .../split/`), each behind a confirmation. */
function personActions(ctx: Ctx, p: Person, at: string): HTMLElement {
  const name = displayName(p);
  const deleteEvents = h('input', { type: 'checkbox', id: 'delete-events' });
  const remove = confirmDialog(
    'delete-person',
    'Delete person?',
    [
      h(
        'p',
        {},
        `${name} and their distinct ids (${p.distinct_ids.join(', ')}) are removed. `,
        'Events sent later with those ids make a new person.',
      ),
      h(
        'label',
        { for: 'delete-events', class: 'check' },
        deleteEvents,
        ' Also delete all of their events (cannot be undone)',
      ),
    ],
    'Delete',
    (showError, close) =>
      ctx.run(async () => {
        try {
          await api('DELETE', deleteEvents.checked ? `${at}?delete_events=true` : at);
        } catch (e) {
          if (!(e instanceof ApiError)) throw e;
          return showError(e.detail);
        }
        close();
        flash = deleteEvents.checked ? `${name} deleted; their events are being deleted.` : `${name} deleted.`;
        ctx.navigate({ page: 'persons' });
      }),
  );
  const parts: HTMLElement[] = [remove.open, remove.dialog];
  if (p.distinct_ids.length > 1) {
    const main = select(
      p.distinct_ids.map((d) => [d, d] as const),
      p.distinct_ids[0] ?? '',
    );
    main.id = 'split-main';
    const split = confirmDialog(
      'split-person',
      'Split person?',
      [
        h('p', {}, `Each of the ${p.distinct_ids.length} distinct ids becomes a person of its own.`),
        h(
          'div',
          { class: 'field' },
          h('label', { for: 'split-main' }, 'Distinct id that keeps this person and its properties'),
          main,
        ),
      ],
      'Split',
      (showError, close) =>
        ctx.run(async () => {
          try {
            await api('POST', `${at}split/`, { main_distinct_id: main.value });
          } catch (e) {
            if (!(e instanceof ApiError)) throw e;
            return showError(e.detail);
          }
          close();
          flash = `Split into ${p.distinct_ids.length} persons.`;
          await ctx.refresh();
        }),
    );
    parts.unshift(split.open, split.dialog);
  } else {
    parts.push(h('p', {}, 'One distinct id: nothing to split.'));
  }
  return h('div', { class: 'row', id: 'person-actions' }, ...parts);
}
