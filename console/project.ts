import { api, ApiError } from './api.ts';
import type { Ctx } from './main.ts';
import { clear, field, h, select, showFieldError, text } from './dom.ts';

interface Project {
  id: number;
  name: string;
  api_token: string;
  timezone: string;
  autocapture_opt_out: boolean;
  test_account_filters: { key?: unknown; value?: unknown; operator?: unknown; type?: unknown }[];
}

const OPERATORS = [
  ['exact', 'equals'],
  ['is_not', "doesn't equal"],
  ['icontains', 'contains'],
  ['not_icontains', "doesn't contain"],
  ['regex', 'matches regex'],
  ['not_regex', "doesn't match regex"],
  ['is_set', 'is set'],
  ['is_not_set', 'is not set'],
] as const;
const FILTER_TYPES = [
  ['person', 'Person property'],
  ['event', 'Event property'],
] as const;

/** The snippet a site pastes: the SDK from this service itself, pointed back at it. */
export function snippet(token: string, origin: string, autocapture: boolean): string {
  return [
    `<script src="${origin}/static/array.js"></script>`,
    '<script>',
    `  posthog.init(${JSON.stringify(token)}, { api_host: ${JSON.stringify(origin)}${autocapture ? '' : ', autocapture: false'} });`,
    '</script>',
  ].join('\n');
}

/** The project's token and snippet, and the settings PATCH /api/environments/:id takes. */
export async function projectPage(body: HTMLElement, ctx: Ctx): Promise<void> {
  const p = await api<Project>('GET', `/api/environments/${ctx.projectId}/`);
  const code = snippet(p.api_token, location.origin, !p.autocapture_opt_out);
  const copyStatus = h('span', { role: 'status' });
  const copy = (value: string) => async () => {
    try {
      await navigator.clipboard.writeText(value);
      copyStatus.textContent = 'Copied.';
    } catch {
      copyStatus.textContent = 'Select the text and copy it (the browser refused the clipboard).';
    }
  };
  const autocapture = h('input', { type: 'checkbox', id: 'project-autocapture_opt_out' });
  autocapture.checked = !p.autocapture_opt_out;
  const zones = h('datalist', { id: 'time-zones' });
  for (const z of Intl.supportedValuesOf('timeZone')) zones.append(h('option', { value: z }));
  const timezone = h('input', { value: p.timezone, list: 'time-zones', autocomplete: 'off' });
  const rows = h('tbody');
  // Labels number rows as they were added, so a removal never leaves two rows with one name.
  let added = 0;
  const addRow = (f: Project['test_account_filters'][number] = {}) => {
    const n = added++;
    const type = select(FILTER_TYPES, f.type === 'event' ? 'event' : 'person');
    const key = h('input', {
      value: text(f.key ?? ''),
      autocomplete: 'off',
      'aria-label': `Filter ${n + 1}: property`,
    });
    const op = select(OPERATORS, OPERATORS.some(([o]) => o === f.operator) ? String(f.operator) : 'not_icontains');
    const value = h('input', {
      value: Array.isArray(f.value) ? f.value.map(text).join(', ') : text(f.value ?? ''),
      autocomplete: 'off',
      'aria-label': `Filter ${n + 1}: value`,
    });
    type.setAttribute('aria-label', `Filter ${n + 1}: kind`);
    op.setAttribute('aria-label', `Filter ${n + 1}: operator`);
    const remove = h('button', { type: 'button', class: 'link', 'aria-label': `Remove filter ${n + 1}` }, 'Remove');
    const tr = h(
      'tr',
      {},
      h('td', {}, type),
      h('td', {}, key),
      h('td', {}, op),
      h('td', {}, value),
      h('td', {}, remove),
    );
    remove.addEventListener('click', () => tr.remove());
    rows.append(tr);
  };
  for (const f of p.test_account_filters ?? []) addRow(f);
  const add = h('button', { type: 'button' }, 'Add filter');
  add.addEventListener('click', () => addRow());
  const saved = h('p', { role: 'status', id: 'project-saved' });
  const form = h(
    'form',
    { class: 'stack', id: 'project-form' },
    h('h2', {}, 'Settings'),
    h(
      'div',
      { class: 'field' },
      h('label', { for: 'project-autocapture_opt_out' }, autocapture, ' Autocapture clicks, inputs and page views'),
      h('p', { class: 'error', id: 'project-autocapture_opt_out-error' }),
    ),
    field('Time zone', timezone, 'project-timezone'),
    zones,
    h('h3', {}, 'Test account filters'),
    h('p', {}, 'Events matching these are left out of trends when "filter test accounts" is on.'),
    h(
      'div',
      { class: 'scroll' },
      h(
        'table',
        {},
        h('caption', {}, 'Filters'),
        h(
          'thead',
          {},
          h('tr', {}, ...['Kind', 'Property', 'Operator', 'Value', ''].map((c) => h('th', { scope: 'col' }, c))),
        ),
        rows,
      ),
    ),
    h('p', { class: 'error', id: 'project-test_account_filters-error', role: 'alert' }),
    h('div', { class: 'row' }, add, h('button', { type: 'submit' }, 'Save settings')),
    h('p', { class: 'error', id: 'project-form-error', role: 'alert' }),
    saved,
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void ctx.run(save);
  });
  const save = async () => {
    saved.textContent = '';
    const filters = [...rows.children].map((tr) => {
      const [type, key, op, value] = [
        ...tr.querySelectorAll<HTMLInputElement | HTMLSelectElement>('input, select'),
      ].map((c) => c.value);
      const needsValue = op !== 'is_set' && op !== 'is_not_set';
      return { key: key?.trim(), operator: op, type, ...(needsValue ? { value } : {}) };
    });
    try {
      await api('PATCH', `/api/environments/${ctx.projectId}/`, {
        timezone: timezone.value.trim(),
        autocapture_opt_out: !autocapture.checked,
        test_account_filters: filters,
      });
      showFieldError(form, 'project-', null, '');
      saved.textContent = 'Saved.';
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      const attr = err.attr?.startsWith('test_account_filters') ? 'test_account_filters' : err.attr;
      showFieldError(form, 'project-', attr, err.detail);
    }
  };
  const tokenButton = h('button', { type: 'button' }, 'Copy token');
  tokenButton.addEventListener('click', copy(p.api_token));
  const snippetButton = h('button', { type: 'button' }, 'Copy snippet');
  snippetButton.addEventListener('click', copy(code));
  clear(
    body,
    h('h1', {}, 'Project: ', p.name),
    h('h2', {}, 'Project token'),
    h('p', {}, 'Public: it lets a site send events to this project and nothing more.'),
    h('div', { class: 'row' }, h('code', { id: 'project-token' }, p.api_token), tokenButton),
    h('h2', {}, 'Install posthog-js'),
    h('p', {}, 'Paste into every page, before </head>. The SDK is served by this service.'),
    h('pre', { id: 'project-snippet', class: 'code', tabindex: 0, 'aria-label': 'Snippet' }, code),
    h('div', { class: 'row' }, snippetButton, copyStatus),
    form,
  );
}
