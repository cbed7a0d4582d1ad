// DOM building blocks. Every value from the API goes into the page as
// text (text nodes, attributes), never as HTML.

import { absTime, relTime, toDate, shortID } from './format.js';

// h builds an element: h('a', {href: '#/x', class: 'c'}, 'text', child).
// Props starting with "on" are listeners; null, false and undefined
// children are skipped; arrays are flattened.
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

// none is the placeholder of an empty value.
export const none = () => h('span', { class: 'muted' }, '—');

// or shows v, or the placeholder when it is empty.
export const or = (v) => (v === '' || v === null || v === undefined ? none() : String(v));

// link to a hash route.
export const link = (route, text, title) => h('a', { href: '#' + route, title }, text);

// idLink links an object by its short ID, the full one on hover.
export function idLink(kind, id, text) {
  if (!id) return none();
  return h('a', { href: `#/${kind}/${encodeURIComponent(id)}`, title: id, class: 'mono' }, text || shortID(id));
}

// badge is a colored word: kind picks the color (see style.css).
export const badge = (text, kind, title) =>
  h('span', { class: `badge b-${kind || 'neutral'}`, title }, text);

// when is a time shown relative to now ("12s ago"), the absolute time on
// hover; the page's clock refreshes it every second. Zero times are none.
export function when(v) {
  const d = toDate(v);
  if (!d) return none();
  return h('time', { datetime: d.toISOString(), title: absTime(d), 'data-rel': '' }, relTime(d));
}

// refreshTimes updates every relative time under root.
export function refreshTimes(root) {
  for (const el of root.querySelectorAll('time[data-rel]')) {
    el.textContent = relTime(new Date(el.getAttribute('datetime')));
  }
}

// table: headers, rows of cells (or {cells, attrs} for a row with
// attributes), and the text to show when there is no row.
export function table(headers, rows, empty) {
  if (!rows.length) return h('p', { class: 'empty' }, empty || 'None');
  return h('div', { class: 'table-wrap' },
    h('table', null,
      h('thead', null, h('tr', null, headers.map((x) => h('th', null, x)))),
      h('tbody', null, rows.map((r) => {
        const row = Array.isArray(r) ? { cells: r } : r;
        return h('tr', row.attrs, row.cells.map((c) => cell(c)));
      }))));
}

function cell(c) {
  if (c && typeof c === 'object' && !(c instanceof Node) && !Array.isArray(c)) {
    return h('td', c.attrs, c.value);
  }
  return h('td', null, c === '' || c === null || c === undefined ? none() : c);
}

// kv is a list of label/value pairs; a pair with value undefined is left
// out.
export function kv(pairs) {
  const items = pairs.filter((p) => p && p[1] !== undefined);
  return h('dl', { class: 'kv' }, items.map(([k, v]) => [
    h('dt', null, k), h('dd', null, v === '' || v === null ? none() : v)]));
}

// pending stands for the part of a page that st (the page's state) has no
// answer for under key: loading, or hidden when the token may not read it.
export const pending = (st, key) => (st.hidden[key]
  ? h('p', { class: 'empty hidden-part' }, `Not shown: ${st.hidden[key].message}`)
  : h('p', { class: 'loading' }, 'Loading…'));

// section is a titled part of a page; card is one without a title.
export const section = (title, ...body) =>
  h('section', { class: 'card' }, h('h2', null, title), ...body);
export const card = (...body) => h('section', { class: 'card' }, ...body);

// pageHead is a page's title line: a kind, a name and badges.
export const pageHead = (kind, name, ...badges) =>
  h('div', { class: 'page-head' }, h('span', { class: 'kind' }, kind), h('h1', null, name), ...badges);

// panel is a message box: kind "error", "gone", "info" or "warn".
export const panel = (kind, title, ...body) =>
  h('div', { class: `panel ${kind}`, role: kind === 'error' ? 'alert' : null },
    h('strong', null, title), ...body.map((b) => (typeof b === 'string' ? h('p', null, b) : b)));

// healthCount shows healthy/expected, green when all are healthy.
export function healthCount(healthy, expected) {
  const kind = expected === 0 ? 'neutral' : healthy === expected ? 'ok' : healthy === 0 ? 'bad' : 'warn';
  return badge(`${healthy}/${expected}`, kind, `${healthy} healthy of ${expected} expected`);
}

// healthBadge shows a plugin instance's health.
export const healthBadge = (healthy, description) =>
  badge(healthy ? 'healthy' : 'unhealthy', healthy ? 'ok' : 'bad', description);
