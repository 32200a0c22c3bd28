import { api, runQuery } from './api.ts';
import type { Ctx } from './main.ts';
import { clear, h, text } from './dom.ts';

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
  clear(body, h('h1', {}, 'Persons'), form, list);
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

/** One person: properties, distinct ids and their newest events. */
async function personView(body: HTMLElement, ctx: Ctx, id: string): Promise<void> {
  const p = await api<Person>('GET', `/api/environments/${ctx.projectId}/persons/${encodeURIComponent(id)}/`);
  const events = await runQuery(ctx.projectId, {
    kind: 'EventsQuery',
    select: ['event', 'timestamp'],
    orderBy: ['timestamp DESC'],
    personId: String(p.id),
    after: '-90d',
    limit: 50,
  }).catch(() => ({ results: [] }));
  const props = Object.entries(p.properties).sort(([a], [b]) => a.localeCompare(b));
  clear(
    body,
    h(
      'p',
      {},
      h('a', { href: `?${new URLSearchParams({ page: 'persons', project: String(ctx.projectId) })}` }, '← All persons'),
    ),
    h('h1', { id: 'person-name' }, displayName(p)),
    h('p', {}, 'Distinct ids: ', p.distinct_ids.join(', ')),
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
    h('h2', {}, 'Events'),
    h(
      'ul',
      { id: 'person-events' },
      ...(events.results ?? []).map((r: unknown[]) => h('li', {}, `${text(r[1])} ${text(r[0])}`)),
    ),
  );
}
