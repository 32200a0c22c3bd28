import { api } from './api.ts';
import type { Ctx } from './main.ts';
import { clear, h, text } from './dom.ts';

interface Person {
  id: string;
  name?: string;
  distinct_ids: string[];
  properties: Record<string, unknown>;
  created_at: string;
}

/** Persons with search and PostHog's paging (`next`); a person's properties on the row. */
export async function personsPage(body: HTMLElement, ctx: Ctx): Promise<void> {
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
  const tbody = h('tbody');
  for (const p of page.results) {
    const details = h(
      'details',
      {},
      h('summary', {}, 'Properties'),
      h('pre', {}, JSON.stringify(p.properties, null, 2)),
    );
    tbody.append(
      h(
        'tr',
        {},
        h('td', {}, text(p.properties.name ?? p.properties.email ?? p.name ?? p.distinct_ids[0])),
        h('td', {}, p.distinct_ids.join(', ')),
        h('td', {}, text(p.created_at)),
        h('td', {}, details),
      ),
    );
  }
  const table = h(
    'table',
    {},
    h('caption', {}, `${page.results.length} persons`),
    h('thead', {}, h('tr', {}, ...['Name', 'Distinct ids', 'Created', ''].map((c) => h('th', { scope: 'col' }, c)))),
    tbody,
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
  clear(
    list,
    h('div', { class: 'scroll', tabindex: 0, role: 'region', 'aria-label': 'Scrollable table' }, table),
    more,
  );
}
