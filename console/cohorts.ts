import { api, ApiError } from './api.ts';
import type { Ctx } from './main.ts';
import { clear, field, h, showFieldError, text } from './dom.ts';
import { personRows, type Person, shown, type TimelinePoint, timelineTable } from './persons.ts';

interface Cohort {
  id: number;
  name: string;
  count: number | null;
  is_static: boolean;
  is_calculating: boolean;
  errors_calculating: number;
}

const link = (ctx: Ctx, params: Record<string, string>) =>
  `?${new URLSearchParams({ project: String(ctx.projectId), ...params })}`;

/** Cohorts: the list with a static cohort made from a CSV upload, or one cohort's persons (`cohort=id`). */
export async function cohortsPage(body: HTMLElement, ctx: Ctx): Promise<void> {
  const base = `/api/environments/${ctx.projectId}/cohorts/`;
  const id = ctx.params.get('cohort');
  if (id) return cohortView(body, ctx, base, id);
  const list = await api<{ results: Cohort[] }>('GET', `${base}?limit=100`);
  const name = h('input', { autocomplete: 'off' });
  const file = h('input', { type: 'file', accept: '.csv,text/csv' });
  const form = h(
    'form',
    { class: 'stack', id: 'cohort-form' },
    h('h2', {}, 'New static cohort from a CSV'),
    h('p', {}, 'One column of distinct ids (or a header naming distinct_id, person_id or email).'),
    field('Cohort name', name, 'cohort-name'),
    field('CSV file', file, 'cohort-csv'),
    h('div', { class: 'row' }, h('button', { type: 'submit' }, 'Create cohort')),
    h('p', { class: 'error', id: 'cohort-form-error', role: 'alert' }),
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void ctx.run(create);
  });
  const create = async () => {
    const upload = new FormData();
    upload.set('name', name.value);
    upload.set('is_static', 'true');
    const csv = file.files?.[0];
    if (csv) upload.set('csv', csv, csv.name);
    try {
      const created = await api<Cohort>('POST', base, upload);
      ctx.navigate({ page: 'cohorts', cohort: String(created.id) });
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      showFieldError(form, 'cohort-', err.attr, err.detail);
    }
  };
  const rows = list.results.map((c) =>
    h(
      'tr',
      {},
      h('th', { scope: 'row' }, h('a', { href: link(ctx, { page: 'cohorts', cohort: String(c.id) }) }, c.name)),
      h('td', {}, c.is_static ? 'Static' : 'Dynamic'),
      h('td', {}, c.is_calculating ? 'Calculating…' : text(c.count ?? 0)),
    ),
  );
  clear(
    body,
    h('h1', {}, 'Cohorts'),
    list.results.length
      ? h(
          'div',
          { class: 'scroll', tabindex: 0, role: 'region', 'aria-label': 'Cohorts' },
          h(
            'table',
            { id: 'cohorts-table' },
            h('caption', {}, `${list.results.length} cohorts`),
            h('thead', {}, h('tr', {}, ...['Name', 'Type', 'Persons'].map((c) => h('th', { scope: 'col' }, c)))),
            h('tbody', {}, ...rows),
          ),
        )
      : h('p', {}, 'No cohorts yet.'),
    form,
  );
}

async function cohortView(body: HTMLElement, ctx: Ctx, base: string, id: string): Promise<void> {
  const cursor = ctx.params.get('cursor');
  const [cohort, persons] = await Promise.all([
    api<Cohort>('GET', `${base}${encodeURIComponent(id)}/`),
    api<{ results: Person[]; next: string | null }>(
      'GET',
      `${base}${encodeURIComponent(id)}/persons/?limit=50${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    ),
  ]);
  const next = persons.next ? new URL(persons.next, location.origin).searchParams.get('cursor') : null;
  clear(
    body,
    h('p', {}, h('a', { href: link(ctx, { page: 'cohorts' }) }, '← All cohorts')),
    h('h1', {}, cohort.name),
    h('p', {}, `${cohort.is_static ? 'Static' : 'Dynamic'} cohort · ${text(cohort.count ?? 0)} persons`),
    personRows(ctx, persons.results, 'cohort-persons', 'Persons in this cohort'),
    next ? h('a', { href: link(ctx, { page: 'cohorts', cohort: id, cursor: next }) }, 'Next page') : null,
  );
}

interface GroupType {
  group_type_index: number;
  group_type: string;
  name_singular: string | null;
  name_plural: string | null;
}

/** Groups of one type (`type=index`), newest first, with their properties. */
export async function groupsPage(body: HTMLElement, ctx: Ctx): Promise<void> {
  const types = await api<GroupType[]>('GET', `/api/environments/${ctx.projectId}/groups_types/`);
  if (!types.length)
    return clear(body, h('h1', {}, 'Groups'), h('p', {}, 'No group types yet: capture an event with $groups.'));
  const index = Number(ctx.params.get('type') ?? types[0]?.group_type_index ?? 0);
  const key = ctx.params.get('key');
  if (key !== null) return groupView(body, ctx, types, index, key);
  const cursor = ctx.params.get('cursor');
  const groups = await api<{
    results: { group_key: string; group_properties: unknown; created_at: string }[];
    next: string | null;
  }>(
    'GET',
    `/api/environments/${ctx.projectId}/groups/?group_type_index=${index}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
  );
  const next = groups.next ? new URL(groups.next, location.origin).searchParams.get('cursor') : null;
  const tabs = h(
    'nav',
    { 'aria-label': 'Group types', class: 'row' },
    ...types.map((t) =>
      h(
        'a',
        {
          href: link(ctx, { page: 'groups', type: String(t.group_type_index) }),
          'aria-current': t.group_type_index === index ? 'page' : undefined,
        },
        t.name_plural || t.group_type,
      ),
    ),
  );
  const rows = groups.results.map((g) =>
    h(
      'tr',
      {},
      h(
        'th',
        { scope: 'row' },
        h('a', { href: link(ctx, { page: 'groups', type: String(index), key: g.group_key }) }, g.group_key),
      ),
      h(
        'td',
        {},
        h('details', {}, h('summary', {}, 'Properties'), h('pre', {}, JSON.stringify(g.group_properties, null, 2))),
      ),
      h('td', {}, g.created_at),
    ),
  );
  clear(
    body,
    h('h1', {}, 'Groups'),
    tabs,
    groups.results.length
      ? h(
          'div',
          { class: 'scroll', tabindex: 0, role: 'region', 'aria-label': 'Groups' },
          h(
            'table',
            { id: 'groups-table' },
            h('caption', {}, `${groups.results.length} groups`),
            h('thead', {}, h('tr', {}, ...['Key', 'Properties', 'Created'].map((c) => h('th', { scope: 'col' }, c)))),
            h('tbody', {}, ...rows),
          ),
        )
      : h('p', {}, 'No groups of this type yet.'),
    next ? h('a', { href: link(ctx, { page: 'groups', type: String(index), cursor: next }) }, 'Next page') : null,
  );
}

/** One group: its properties now, and how they came to be (each `$group_set` that changed them). */
async function groupView(body: HTMLElement, ctx: Ctx, types: GroupType[], index: number, key: string): Promise<void> {
  const type = types.find((t) => t.group_type_index === index);
  const query = new URLSearchParams({ group_type_index: String(index), group_key: key });
  const [group, timeline] = await Promise.all([
    api<{ group_key: string; group_properties: Record<string, unknown>; created_at: string }>(
      'GET',
      `/api/environments/${ctx.projectId}/groups/find/?${query}`,
    ),
    shown(
      api<{ points: TimelinePoint[] }>('GET', `/api/environments/${ctx.projectId}/groups/property_timeline/?${query}`),
    ),
  ]);
  clear(
    body,
    h(
      'p',
      {},
      h(
        'a',
        { href: link(ctx, { page: 'groups', type: String(index) }) },
        `All ${type?.name_plural || type?.group_type || 'groups'}`,
      ),
    ),
    h('h1', {}, group.group_key),
    h('p', {}, `${type?.name_singular || type?.group_type || 'Group'} since ${text(group.created_at)}`),
    h('h2', {}, 'Properties'),
    h('pre', { id: 'group-properties' }, JSON.stringify(group.group_properties, null, 2)),
    h('h2', {}, 'Properties timeline'),
    timelineTable(timeline, 'group-timeline'),
  );
}
