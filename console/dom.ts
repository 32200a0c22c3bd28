/**
 * The console's only way to put data on the page: elements built with createElement and text set as
 * text nodes. No innerHTML anywhere, so an event or person named `<img onerror=…>` is shown, never run.
 */
type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | EventListener | undefined>;

/** Links may only point inside the console: a `javascript:` or foreign URL from data never becomes an href. */
export const safeHref = (href: string) => (/^[/?#](?![/\\])/.test(href) ? href : '#');

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    if (typeof value === 'function') el.addEventListener(name.replace(/^on/, ''), value);
    else if (name === 'href') el.setAttribute('href', safeHref(String(value)));
    else if (name === 'value') (el as HTMLInputElement).value = String(value);
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  append(el, ...children);
  return el;
}

export function append(el: Element, ...children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.append(typeof c === 'object' ? c : document.createTextNode(String(c)));
  }
}

export function clear(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, ...children);
}

/** A labelled control: the label names it for screen readers, the error slot shows the API's detail next to it. */
export function field(label: string, control: HTMLElement, id: string): HTMLElement {
  control.id = id;
  return h(
    'div',
    { class: 'field' },
    h('label', { for: id }, label),
    control,
    h('p', { class: 'error', id: `${id}-error`, role: 'alert' }),
  );
}

export function select(options: readonly (readonly [string, string])[], value: string): HTMLSelectElement {
  const s = h('select');
  for (const [v, text] of options) s.append(h('option', { value: v }, text));
  s.value = value;
  return s;
}

/** Any value as display text: strings as they are, everything else as JSON. */
export const text = (v: unknown): string => (typeof v === 'string' ? v : v === undefined ? '' : JSON.stringify(v));

/**
 * Shows the API's `detail` next to the control its `attr` names (`${prefix}${attr}-error`), or in the
 * form's own slot when no control matches. Earlier messages under the form are cleared first.
 */
export function showFieldError(form: HTMLElement, prefix: string, attr: string | null, detail: string): void {
  for (const slot of form.querySelectorAll('.error')) slot.textContent = '';
  const slot =
    (attr && form.querySelector<HTMLElement>(`[id="${prefix}${CSS.escape(attr)}-error"]`)) ||
    form.querySelector<HTMLElement>(`[id="${prefix}form-error"]`);
  if (slot) slot.textContent = detail;
}
