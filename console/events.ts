import { runQuery } from './api.ts';
import type { Ctx } from './main.ts';
import { clear, h, text } from './dom.ts';

/** Newest events first (EventsQuery); a row opens its properties. */
export async function eventsPage(body: HTMLElement, ctx: Ctx): Promise<void> {
  const filter = h('input', { type: 'search', id: 'event-filter', value: ctx.params.get('event') ?? '' });
  const list = h('div');
  const form = h(
    'form',
    { class: 'row' },
    h('label', { for: 'event-filter' }, 'Event name'),
    filter,
    h('button', { type: 'submit' }, 'Filter'),
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    ctx.navigate({ page: 'events', ...(filter.value ? { event: filter.value } : {}) });
  });
  clear(body, h('h1', {}, 'Events'), form, list);
  const answer = await runQuery(ctx.projectId, {
    kind: 'EventsQuery',
    select: ['*'],
    orderBy: ['timestamp DESC'],
    after: '-30d',
    limit: 100,
    ...(ctx.params.get('event') ? { event: ctx.params.get('event') } : {}),
  });
  // `*` answers one object per row, as PostHog's EventsQuery does.
  const rows: { event?: unknown; distinct_id?: unknown; timestamp?: unknown; properties?: unknown }[] = (
    answer.results ?? []
  ).map((r: unknown[]) => r[0] ?? {});
  if (!rows.length) return clear(list, h('p', {}, 'No events in the last 30 days.'));
  const table = h(
    'table',
    {},
    h('caption', {}, `${rows.length} newest events`),
    h('thead', {}, h('tr', {}, ...['Event', 'Person', 'Time', ''].map((c) => h('th', { scope: 'col' }, c)))),
  );
  const tbody = h('tbody');
  for (const { event, distinct_id: distinctId, timestamp, properties } of rows) {
    const details = h('details', {}, h('summary', {}, 'Properties'), h('pre', {}, JSON.stringify(properties, null, 2)));
    tbody.append(
      h(
        'tr',
        {},
        h('td', {}, text(event)),
        h('td', {}, text(distinctId)),
        h('td', {}, text(timestamp)),
        h('td', {}, details),
      ),
    );
  }
  table.append(tbody);
  clear(list, h('div', { class: 'scroll', tabindex: 0, role: 'region', 'aria-label': 'Scrollable table' }, table));
}
