import uPlot from 'uplot';
import { ApiError, api, runQuery } from './api.ts';
import type { Ctx } from './main.ts';
import { clear, field, h, select, text } from './dom.ts';
import { personRows, type Person } from './persons.ts';

interface Series {
  label: string;
  data: number[];
  labels: string[];
  days: string[];
  count: number;
  aggregated_value?: number;
  breakdown_value?: unknown;
  compare_label?: string;
  action?: { order?: number } | null;
}

const MATHS = [
  ['total', 'Total count'],
  ['dau', 'Unique users'],
  ['weekly_active', 'Weekly active users'],
  ['monthly_active', 'Monthly active users'],
] as const;
const RANGES = [
  ['-24h', 'Last 24 hours'],
  ['-7d', 'Last 7 days'],
  ['-14d', 'Last 14 days'],
  ['-30d', 'Last 30 days'],
  ['-90d', 'Last 90 days'],
] as const;
const INTERVALS = [
  ['hour', 'Hour'],
  ['day', 'Day'],
  ['week', 'Week'],
  ['month', 'Month'],
] as const;
const OPERATORS = [
  ['exact', 'equals'],
  ['is_not', 'does not equal'],
  ['icontains', 'contains'],
  ['not_icontains', 'does not contain'],
  ['gt', 'greater than'],
  ['lt', 'less than'],
  ['is_set', 'is set'],
  ['is_not_set', 'is not set'],
] as const;
const DISPLAYS = [
  ['ActionsLineGraph', 'Line'],
  ['ActionsBar', 'Bar'],
  ['ActionsLineGraphCumulative', 'Cumulative'],
  ['ActionsTable', 'Table'],
  ['BoldNumber', 'Number'],
  ['ActionsPie', 'Pie'],
] as const;
const COLORS = [
  '#1d4aff',
  '#f54e00',
  '#43a047',
  '#b62ad9',
  '#e5a000',
  '#00838f',
  '#d81b60',
  '#6d4c41',
  '#546e7a',
  '#7cb342',
];

export interface TrendsForm {
  events: string[];
  math: string;
  breakdown: string;
  /** One event property filter on every series (empty key: none). */
  filter_key: string;
  filter_operator: string;
  filter_value: string;
  date_from: string;
  interval: string;
  compare: boolean;
  formula: string;
  display: string;
}

const DEFAULT_FORM: TrendsForm = {
  events: ['$pageview'],
  math: 'total',
  breakdown: '',
  filter_key: '',
  filter_operator: 'exact',
  filter_value: '',
  date_from: '-7d',
  interval: 'day',
  compare: false,
  formula: '',
  display: 'ActionsLineGraph',
};

/** The form as PostHog's TrendsQuery: what the console sends to /query and what a user could send. */
export function trendsQuery(f: TrendsForm): Record<string, unknown> {
  return {
    kind: 'TrendsQuery',
    series: f.events.filter(Boolean).map((event) => ({ kind: 'EventsNode', event, name: event, math: f.math })),
    dateRange: { date_from: f.date_from },
    interval: f.interval,
    ...(f.filter_key ? { properties: [propertyFilter(f)] } : {}),
    ...(f.breakdown ? { breakdownFilter: { breakdown: f.breakdown, breakdown_type: 'event' } } : {}),
    ...(f.compare ? { compareFilter: { compare: true } } : {}),
    trendsFilter: { display: f.display, ...(f.formula ? { formula: f.formula } : {}) },
  };
}

/** PostHog's event property filter; `gt`/`lt` compare numbers, `is_set`/`is_not_set` take no value. */
function propertyFilter(f: TrendsForm): Record<string, unknown> {
  const base = { type: 'event', key: f.filter_key, operator: f.filter_operator };
  if (f.filter_operator === 'is_set' || f.filter_operator === 'is_not_set') return base;
  const numeric = (f.filter_operator === 'gt' || f.filter_operator === 'lt') && f.filter_value.trim() !== '';
  return {
    ...base,
    value: numeric && Number.isFinite(Number(f.filter_value)) ? Number(f.filter_value) : f.filter_value,
  };
}

function formFromUrl(params: URLSearchParams): TrendsForm {
  try {
    const q = JSON.parse(params.get('q') ?? 'null');
    if (q && typeof q === 'object')
      return { ...DEFAULT_FORM, ...q, events: Array.isArray(q.events) ? q.events.map(String) : DEFAULT_FORM.events };
  } catch {
    // A hand-edited URL falls back to the default question.
  }
  return DEFAULT_FORM;
}

/** `query__series__0__math` and the like: which control the API's error is about. */
function controlFor(attr: string | null): string {
  if (!attr) return 'trend-form';
  if (/series__1/.test(attr)) return 'event-1';
  if (/series/.test(attr)) return /math/.test(attr) ? 'math' : 'event-0';
  if (/breakdown/.test(attr)) return 'breakdown';
  if (/properties/.test(attr)) return 'filter-key';
  if (/dateRange|date_from/.test(attr)) return 'date_from';
  if (/interval/.test(attr)) return 'interval';
  if (/formula/.test(attr)) return 'formula';
  if (/display/.test(attr)) return 'display';
  return 'trend-form';
}

/** The events of the trend on screen: a broken-down series is named by its event even where the answer omits it. */
let shownEvents: string[] = [];

export async function trendsPage(body: HTMLElement, ctx: Ctx): Promise<void> {
  const f = formFromUrl(ctx.params);
  shownEvents = f.events;
  const names = h('datalist', { id: 'event-names' });
  const ev0 = h('input', { list: 'event-names', value: f.events[0] ?? '', autocomplete: 'off' });
  const ev1 = h('input', { list: 'event-names', value: f.events[1] ?? '', autocomplete: 'off' });
  const math = select(MATHS, f.math);
  const keys = h('datalist', { id: 'property-keys' });
  const breakdown = h('input', {
    list: 'property-keys',
    value: f.breakdown,
    placeholder: 'e.g. $browser',
    autocomplete: 'off',
  });
  const filterKey = h('input', {
    list: 'property-keys',
    value: f.filter_key,
    placeholder: 'e.g. $browser',
    autocomplete: 'off',
  });
  const filterOperator = select(OPERATORS, f.filter_operator);
  const filterValue = h('input', { value: f.filter_value, autocomplete: 'off' });
  const dateFrom = select(RANGES, f.date_from);
  const interval = select(INTERVALS, f.interval);
  const compare = h('input', { type: 'checkbox' });
  compare.checked = f.compare;
  const formula = h('input', { value: f.formula, placeholder: 'e.g. A / B', autocomplete: 'off' });
  const display = select(DISPLAYS, f.display);
  const form = h(
    'form',
    { class: 'trend-form', id: 'trend-form' },
    field('Series A: event', ev0, 'event-0'),
    field('Series B: event (optional)', ev1, 'event-1'),
    field('Math', math, 'math'),
    field('Filter: event property (optional)', filterKey, 'filter-key'),
    field('Filter: operator', filterOperator, 'filter-operator'),
    field('Filter: value', filterValue, 'filter-value'),
    field('Breakdown by event property', breakdown, 'breakdown'),
    field('Date range', dateFrom, 'date_from'),
    field('Interval', interval, 'interval'),
    h(
      'div',
      { class: 'field' },
      h('label', { for: 'compare' }, compare, ' Compare to previous period'),
      h('p', { class: 'error', id: 'compare-error' }),
    ),
    field('Formula (optional)', formula, 'formula'),
    field('Display', display, 'display'),
    h(
      'div',
      { class: 'field' },
      h('button', { type: 'submit' }, 'Show trend'),
      h('p', { class: 'error', id: 'trend-form-error', role: 'alert' }),
    ),
    names,
    keys,
  );
  compare.id = 'compare';
  const read = (): TrendsForm => ({
    events: [ev0.value.trim(), ev1.value.trim()].filter(Boolean),
    math: math.value,
    breakdown: breakdown.value.trim(),
    filter_key: filterKey.value.trim(),
    filter_operator: filterOperator.value,
    filter_value: filterValue.value,
    date_from: dateFrom.value,
    interval: interval.value,
    compare: compare.checked,
    formula: formula.value.trim(),
    display: display.value,
  });
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    ctx.navigate({ page: 'trends', q: JSON.stringify(read()) });
  });
  const status = h('p', { class: 'status', role: 'status' });
  const headline = h('div', { class: 'headline' });
  const chart = h('div', { class: 'chart', id: 'chart' });
  const legend = h('ul', { class: 'legend', 'aria-label': 'Legend' });
  const table = h('div', { class: 'scroll', tabindex: 0, role: 'region', 'aria-label': 'Scrollable table' });
  const download = h('button', { type: 'button', disabled: true }, 'Download CSV');
  clear(
    body,
    h('h1', {}, 'Trends'),
    form,
    status,
    headline,
    chart,
    legend,
    h('div', { class: 'row' }, download),
    table,
  );

  // Names are asked for when a series field is first used, not on every render of a trend.
  const suggest = () => {
    ev0.removeEventListener('focus', suggest);
    ev1.removeEventListener('focus', suggest);
    void loadEventNames(ctx.projectId, names);
  };
  ev0.addEventListener('focus', suggest);
  ev1.addEventListener('focus', suggest);
  // Keys are asked for when a key field is used, for the series' events as they are then (seen on them first).
  let keysFor = '';
  const suggestKeys = () => {
    const events = [ev0.value.trim(), ev1.value.trim()].filter(Boolean);
    if (JSON.stringify(events) === keysFor) return;
    keysFor = JSON.stringify(events);
    void loadPropertyKeys(ctx.projectId, events, keys);
  };
  breakdown.addEventListener('focus', suggestKeys);
  filterKey.addEventListener('focus', suggestKeys);
  status.textContent = 'Loading…';
  let results: Series[];
  try {
    const answer = await runQuery(ctx.projectId, trendsQuery(f), (polls) => {
      status.textContent = `Computing… (${polls})`;
    });
    results = answer.results ?? [];
  } catch (e) {
    status.textContent = '';
    if (!(e instanceof ApiError)) throw e;
    // A background run's failure names no attr: its message still says which field it is about.
    const slot = document.getElementById(
      `${controlFor(e.attr ?? (/formula/i.test(e.detail) ? 'formula' : null))}-error`,
    );
    if (slot) slot.textContent = e.detail;
    return;
  }
  status.textContent = '';
  const current = results.filter((s) => s.compare_label !== 'previous');
  const previous = results.filter((s) => s.compare_label === 'previous');
  const total = (list: Series[]) => list.reduce((sum, s) => sum + (s.aggregated_value ?? s.count ?? 0), 0);
  const now = total(current);
  const change = previous.length ? changeText(now, total(previous)) : '';
  clear(
    headline,
    h('span', { class: 'big', id: 'headline-total' }, formatNumber(now)),
    change ? h('span', { class: 'change' }, change) : null,
  );
  drawLegend(legend, current);
  const actors = h('section', { id: 'actors', 'aria-label': 'Persons behind a point' });
  // A click on a point (a chart point or a table cell) lists the persons behind it, as PostHog's persons modal.
  const showActors = (s: Series, i: number) =>
    ctx.run(async () => {
      const day = s.days[i];
      if (day === undefined) return;
      clear(actors, h('p', { role: 'status' }, 'Loading persons…'));
      try {
        const answer = await runQuery(ctx.projectId, {
          kind: 'ActorsQuery',
          select: ['actor', 'event_count'],
          source: {
            kind: 'InsightActorsQuery',
            source: trendsQuery(f),
            day,
            series: s.action?.order ?? 0,
            ...(s.breakdown_value === undefined ? {} : { breakdown: s.breakdown_value }),
          },
          limit: 100,
        });
        const persons = (answer.results ?? []).map((r: [Person, number]) => r[0]);
        clear(
          actors,
          h('h2', { tabindex: -1 }, `Persons: ${seriesName(s)} on ${s.labels[i] ?? day}`),
          personRows(ctx, persons, 'actors-table', `${persons.length}${answer.hasMore ? '+' : ''} persons`),
        );
        (actors.querySelector('h2') as HTMLElement).focus();
      } catch (e) {
        if (!(e instanceof ApiError)) throw e;
        clear(actors, h('p', { class: 'error', role: 'alert' }, e.detail));
      }
    });
  drawTable(table, current, f.formula ? undefined : showActors);
  body.append(actors);
  if (!['ActionsTable', 'BoldNumber', 'ActionsPie'].includes(f.display) && current.length)
    drawChart(chart, current, f.display, f.formula ? undefined : showActors);
  else if (f.display === 'ActionsPie') drawShares(chart, current);
  download.disabled = false;
  download.addEventListener('click', () => saveCsv(current));
}

async function loadEventNames(projectId: number, list: HTMLDataListElement): Promise<void> {
  try {
    const answer = await api<{ results: { name: string }[] }>(
      'GET',
      `/api/environments/${projectId}/event_definitions/?limit=200`,
    );
    for (const d of answer.results) list.append(h('option', { value: text(d.name) }));
  } catch {
    // Names are only suggestions: the field still takes any event.
  }
}

/** Property keys from property_definitions, those seen on the series' events first (PostHog's order). */
async function loadPropertyKeys(projectId: number, events: string[], list: HTMLDataListElement): Promise<void> {
  const params = new URLSearchParams({ type: 'event', limit: '500' });
  if (events.length) params.set('event_names', JSON.stringify(events));
  try {
    const answer = await api<{ results: { name: string }[] }>(
      'GET',
      `/api/environments/${projectId}/property_definitions/?${params}`,
    );
    clear(list, ...answer.results.map((d) => h('option', { value: text(d.name) })));
  } catch {
    // Keys are only suggestions: the fields still take any key.
  }
}

/** With a breakdown PostHog's `label` is the value: the series is named by its event (by `action.order`), then the value. */
export const seriesName = (s: Series, events: readonly string[] = shownEvents) =>
  s.breakdown_value === undefined || s.breakdown_value === null || s.breakdown_value === ''
    ? s.label
    : `${events[s.action?.order ?? 0] ?? s.label} · ${text(s.breakdown_value)}`;

const formatNumber = (n: number) =>
  Number.isInteger(n) ? n.toLocaleString('en-US') : n.toLocaleString('en-US', { maximumFractionDigits: 2 });

function changeText(now: number, before: number): string {
  if (before === 0) return now === 0 ? 'no change vs previous period' : 'up from 0 in the previous period';
  const pct = ((now - before) / before) * 100;
  return `${pct >= 0 ? '▲' : '▼'} ${Math.abs(pct).toFixed(1)}% vs previous period (${formatNumber(before)})`;
}

function drawLegend(el: HTMLElement, series: Series[]): void {
  clear(
    el,
    ...series.map((s, i) =>
      h('li', {}, h('span', { class: `swatch c${i % COLORS.length}`, 'aria-hidden': 'true' }), seriesName(s)),
    ),
  );
}

function drawTable(el: HTMLElement, series: Series[], pick?: (s: Series, i: number) => void): void {
  const labels = series[0]?.labels ?? [];
  const head = h(
    'tr',
    {},
    h('th', { scope: 'col' }, 'Series'),
    ...labels.map((l) => h('th', { scope: 'col' }, l)),
    h('th', { scope: 'col' }, 'Total'),
  );
  const rows = series.map((s) =>
    h(
      'tr',
      {},
      h('th', { scope: 'row' }, seriesName(s)),
      ...s.data.map((v, i) => {
        if (!pick || v === 0) return h('td', {}, formatNumber(v));
        const b = h(
          'button',
          {
            type: 'button',
            class: 'link',
            'aria-label': `${formatNumber(v)}: persons of ${seriesName(s)} on ${s.labels[i] ?? ''}`,
          },
          formatNumber(v),
        );
        b.addEventListener('click', () => void pick(s, i));
        return h('td', {}, b);
      }),
      h('td', { class: 'total' }, formatNumber(s.aggregated_value ?? s.count)),
    ),
  );
  clear(
    el,
    h('table', { id: 'results-table' }, h('caption', {}, 'Results'), h('thead', {}, head), h('tbody', {}, ...rows)),
  );
}

function drawShares(el: HTMLElement, series: Series[]): void {
  const sum = series.reduce((a, s) => a + s.count, 0) || 1;
  clear(
    el,
    h(
      'ul',
      { class: 'shares' },
      ...series.map((s) => h('li', {}, `${seriesName(s)}: ${((s.count / sum) * 100).toFixed(1)}%`)),
    ),
  );
}

/** uPlot: one canvas, x as Unix seconds of each bucket, a line or bars per series. */
export function drawChart(
  el: HTMLElement,
  series: Series[],
  display: string,
  pick?: (s: Series, i: number) => void,
): uPlot {
  // The first draw's cost, from the answer to pixels (uPlot draws in a microtask), for `npm run bench -- console`.
  const started = performance.now();
  el.replaceChildren();
  delete el.dataset.drawMs;
  const xs = (series[0]?.days ?? []).map(
    (d) => Date.parse(d.length <= 10 ? `${d}T00:00:00Z` : d.replace(' ', 'T')) / 1000,
  );
  const cumulative = display === 'ActionsLineGraphCumulative';
  const ys = series.map((s) =>
    cumulative
      ? s.data.map(
          (
            (acc) => (v: number) =>
              (acc += v)
          )(0),
        )
      : s.data,
  );
  const bars = display === 'ActionsBar' ? uPlot.paths.bars?.({ size: [0.6, 60] }) : undefined;
  const width = Math.max(280, el.clientWidth || 600);
  const plot = new uPlot(
    {
      width,
      height: 300,
      legend: { show: false },
      hooks: {
        draw: [
          () => {
            el.dataset.drawMs ??= (performance.now() - started).toFixed(1);
          },
        ],
      },
      series: [
        {},
        ...series.map((s, i) => ({
          label: seriesName(s),
          stroke: COLORS[i % COLORS.length],
          width: 2,
          ...(bars ? { paths: bars, fill: COLORS[i % COLORS.length] } : {}),
        })),
      ],
      axes: [{}, { size: 60 }],
    },
    [xs, ...ys],
    el,
  );
  // The point under the cursor: its day, and the series whose value is drawn nearest the pointer.
  plot.over.addEventListener('click', () => {
    const i = plot.cursor.idx;
    const top = plot.cursor.top;
    if (!pick || i === null || i === undefined || top === undefined) return;
    let best = -1;
    let distance = Number.POSITIVE_INFINITY;
    ys.forEach((data, s) => {
      const d = Math.abs(plot.valToPos(data[i] ?? 0, 'y') - top);
      if (d < distance) [best, distance] = [s, d];
    });
    const s = series[best];
    if (s) pick(s, i);
  });
  return plot;
}

function csvCell(v: unknown): string {
  const s = text(v);
  // A cell a spreadsheet would run as a formula is quoted with a leading apostrophe.
  const safe = /^[=+\-@\t\r]/.test(s) ? `'${s}` : s;
  return /[",\n\r]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

export function toCsv(series: Series[]): string {
  const labels = series[0]?.labels ?? [];
  const lines = [
    ['series', ...labels, 'total'],
    ...series.map((s) => [seriesName(s), ...s.data, s.aggregated_value ?? s.count]),
  ];
  return `${lines.map((l) => l.map(csvCell).join(',')).join('\n')}\n`;
}

function saveCsv(series: Series[]): void {
  const url = URL.createObjectURL(new Blob([toCsv(series)], { type: 'text/csv' }));
  const a = h('a', {});
  a.setAttribute('href', url);
  a.setAttribute('download', 'trend.csv');
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 0);
}
