/**
 * The web console: a client of this service's public API and nothing else. The view and the question
 * live in the URL (`/?page=trends&project=1&q=…`), so a view is shareable and the back button works.
 */
import 'uplot/dist/uPlot.min.css';
import './styles.css';
import { api, ApiError, forgetKey, saveKey, savedKey } from './api.ts';
import { clear, field, h } from './dom.ts';
import { cohortsPage, groupsPage } from './cohorts.ts';
import { eventsPage } from './events.ts';
import { exportsPage } from './exports.ts';
import { personsPage } from './persons.ts';
import { projectPage } from './project.ts';
import { trendsPage } from './trends.ts';

export interface Ctx {
  projectId: number;
  /** The project's organization: batch exports live under it. */
  orgId: string;
  params: URLSearchParams;
  /** Moves to another view; `replace` keeps history (a form edit), otherwise the back button returns here. */
  navigate(params: Record<string, string>, replace?: boolean): void;
  /** Draws the current view again from the API (after an action changed what it shows). */
  refresh(): Promise<void>;
  /** Runs a user's action (a save, a pause) with the page marked busy until it and any redraw it starts are done. */
  run(action: () => Promise<void>): Promise<void>;
}

const PAGES = [
  ['trends', 'Trends', trendsPage],
  ['events', 'Events', eventsPage],
  ['persons', 'Persons', personsPage],
  ['cohorts', 'Cohorts', cohortsPage],
  ['groups', 'Groups', groupsPage],
  ['exports', 'Batch exports', exportsPage],
  ['project', 'Project', projectPage],
] as const;

const root = () => document.getElementById('app') as HTMLElement;

function signIn(message?: string): void {
  const input = h('input', { type: 'password', autocomplete: 'off', spellcheck: 'false', required: true });
  const form = h(
    'form',
    { class: 'signin' },
    h('h1', {}, 'Sign in'),
    h(
      'p',
      {},
      'Paste a personal API key. It stays in this tab only (sessionStorage) and is sent only to this service.',
    ),
    field('Personal API key', input, 'key'),
    h('button', { type: 'submit' }, 'Sign in'),
  );
  if (message) (form.querySelector('#key-error') as HTMLElement).textContent = message;
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    saveKey(input.value.trim());
    void render();
  });
  clear(root(), form);
  input.focus();
}

interface Org {
  id: string;
  name: string;
  projects: { id: number; name: string }[];
}

/**
 * Each render is numbered; `#app[data-state]` says `loading` until the newest one has drawn its page
 * (`ready`) or failed (`failed`). Tests and assistive tech wait on it instead of on time; an older
 * render that finishes late never marks the page ready.
 */
let renders = 0;

function settle(generation: number, state: 'ready' | 'failed'): void {
  if (generation === renders) root().dataset.state = state;
}

/** Marks the page loading until `work` ends; a render started meanwhile takes over the signal. */
async function busy(work: () => Promise<void>): Promise<void> {
  const generation = ++renders;
  root().dataset.state = 'loading';
  try {
    await work();
    settle(generation, 'ready');
  } catch (e) {
    settle(generation, 'failed');
    throw e;
  }
}

function render(): Promise<void> {
  return busy(draw);
}

async function draw(): Promise<void> {
  if (!savedKey()) return signIn();
  const params = new URLSearchParams(location.search);
  let orgs: { results: Org[] };
  try {
    orgs = await api('GET', '/api/organizations/');
  } catch (e) {
    if (e instanceof ApiError && (e.status === 401 || e.status === 403)) {
      forgetKey();
      return signIn(e.status === 401 ? e.detail : `This key cannot list organizations: ${e.detail}`);
    }
    throw e;
  }
  const projects = orgs.results.flatMap((o) => o.projects.map((p) => ({ ...p, org: o.name, orgId: o.id })));
  const projectId = Number(params.get('project') ?? projects[0]?.id);
  const pageName = params.get('page') ?? 'trends';
  const page = PAGES.find(([name]) => name === pageName) ?? PAGES[0];
  const navigate = (next: Record<string, string>, replace = false) => {
    const url = `?${new URLSearchParams({ project: String(projectId), ...next })}`;
    if (replace) history.replaceState(null, '', url);
    else history.pushState(null, '', url);
    if (!replace) void render();
  };
  const projectPicker = h('select', { id: 'project', 'aria-label': 'Project' });
  for (const p of projects) projectPicker.append(h('option', { value: String(p.id) }, `${p.org} / ${p.name}`));
  projectPicker.value = String(projectId);
  projectPicker.addEventListener('change', () => navigate({ page: page[0], project: projectPicker.value }));
  const nav = h(
    'nav',
    { 'aria-label': 'Pages' },
    ...PAGES.map(([name, label]) =>
      h(
        'a',
        {
          href: `?${new URLSearchParams({ page: name, project: String(projectId) })}`,
          'aria-current': name === page[0] ? 'page' : undefined,
        },
        label,
      ),
    ),
  );
  const signOut = h('button', { type: 'button', class: 'link' }, 'Sign out');
  signOut.addEventListener('click', () => {
    forgetKey();
    history.pushState(null, '', '/');
    signIn();
  });
  const body = h('section', { class: 'page', 'aria-live': 'polite', 'aria-busy': 'true' });
  clear(root(), h('header', {}, h('strong', {}, 'Analytics'), nav, projectPicker, signOut), body);
  if (!projects.length) return clear(body, h('p', {}, 'This key sees no project.'));
  const orgId = projects.find((p) => p.id === projectId)?.orgId ?? '';
  await page[2](body, { projectId, orgId, params, navigate, refresh: render, run: busy });
  body.setAttribute('aria-busy', 'false');
}

function showFailure(error: unknown): void {
  const detail = error instanceof ApiError ? error.detail : error instanceof Error ? error.message : String(error);
  const slot = document.querySelector('.page') ?? root();
  slot.append(h('p', { class: 'error', role: 'alert' }, detail));
}

// Links within the console (`?page=…`) move through its history without reloading the page.
document.addEventListener('click', (e) => {
  const a = (e.target as Element).closest('a');
  const href = a?.getAttribute('href');
  if (!a || !href?.startsWith('?') || a.hasAttribute('download') || e.ctrlKey || e.metaKey || e.shiftKey) return;
  e.preventDefault();
  history.pushState(null, '', href);
  void render().catch(showFailure);
});

window.addEventListener('popstate', () => void render().catch(showFailure));
void render().catch(showFailure);
