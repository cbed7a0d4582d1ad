// The UI's shell: hash routes to pages, each page's blocking queries,
// rendering on every answer, the token box and the connection state.

import { watch, getToken, setToken } from './api.js';
import { h, panel, refreshTimes, when } from './dom.js';
import { nodesPage, nodePage } from './pages/nodes.js';
import { pluginsPage, pluginPage } from './pages/plugins.js';
import { volumesPage, volumePage } from './pages/volumes.js';
import { jobsPage, jobPage } from './pages/jobs.js';
import { allocsPage, allocPage } from './pages/allocs.js';

// routes: a hash path pattern and the page it makes, given the decoded
// capture (an ID), if any, and the signal that ends the page.
const routes = [
  [/^\/nodes$/, nodesPage], [/^\/nodes\/([^/]+)$/, nodePage],
  [/^\/plugins$/, pluginsPage], [/^\/plugins\/([^/]+)$/, pluginPage],
  [/^\/volumes$/, volumesPage], [/^\/volumes\/([^/]+)$/, volumePage],
  [/^\/jobs$/, jobsPage], [/^\/jobs\/([^/]+)$/, jobPage],
  [/^\/allocations$/, allocsPage], [/^\/allocations\/([^/]+)$/, allocPage],
];

const main = document.getElementById('main');
let current = null; // the running page's AbortController

function route() {
  if (current) current.abort();
  current = new AbortController();
  const path = location.hash.replace(/^#/, '') || '/volumes';
  for (const a of document.querySelectorAll('#nav a')) {
    a.classList.toggle('active', path.split('/')[1] === a.dataset.section);
  }
  for (const [re, make] of routes) {
    const m = path.match(re);
    if (m) {
      const signal = current.signal;
      const page = make(m[1] === undefined ? undefined : decodeURIComponent(m[1]), signal);
      page.list = `#/${path.split('/')[1]}`;
      run(page, signal);
      return;
    }
  }
  document.title = 'berth';
  main.replaceChildren(panel('gone', 'No such page', `The UI has no page at #${path}.`,
    h('p', null, h('a', { href: '#/volumes' }, 'Volumes'))));
}

// run keeps a page's watches going until signal aborts. A page is
// {title, watches(st) -> {key: path}, render(st) -> Node}; its first
// watch is its primary object. st holds, by watch key, the last answer
// (data), the 404 (gone), the failure being retried (errors) and the 403
// of a part of the page the token may not read (hidden); a 403 on the
// primary object is the whole page's (denied).
function run(page, signal) {
  const st = { data: {}, gone: {}, errors: {}, hidden: {}, denied: null, primary: '' };
  const running = new Map(); // key -> {path, ctl}
  let scheduled = false;

  const sync = () => {
    const want = page.watches(st);
    st.primary = Object.keys(want)[0];
    for (const [k, w] of running) {
      if (want[k] === w.path) continue;
      w.ctl.abort();
      running.delete(k);
      delete st.data[k]; delete st.gone[k]; delete st.errors[k]; delete st.hidden[k];
    }
    for (const [k, path] of Object.entries(want)) {
      if (running.has(k) || !path) continue;
      const ctl = new AbortController();
      signal.addEventListener('abort', () => ctl.abort(), { once: true });
      running.set(k, { path, ctl });
      watch(path, ctl.signal, handlers(k));
    }
  };
  const changed = () => {
    if (signal.aborted || scheduled) return;
    scheduled = true;
    queueMicrotask(() => {
      scheduled = false;
      if (signal.aborted) return;
      sync();
      draw(page, st);
    });
  };
  const handlers = (k) => ({
    data(body) { st.data[k] = body; delete st.gone[k]; delete st.errors[k]; conn(true); changed(); },
    gone(err) { delete st.data[k]; delete st.errors[k]; st.gone[k] = err; conn(true); changed(); },
    denied(err) {
      if (k === st.primary) {
        st.denied = err;
        showToken(err.message);
      } else st.hidden[k] = err; // the rest of the page still shows
      conn(true);
      changed();
    },
    error(err, ms) { st.errors[k] = { err, until: Date.now() + ms }; conn(err.status !== 0, err); changed(); },
  });
  sync();
  draw(page, st);
}

function draw(page, st) {
  document.title = `berth · ${page.title}`;
  const p = st.primary;
  let view;
  if (st.denied) {
    view = panel('error', 'Permission denied', st.denied.message,
      h('p', null, 'This agent enforces ACLs: give a token whose policies can read this page. ',
        h('button', { type: 'button', onclick: () => showToken(st.denied.message) }, 'Enter a token')));
  } else if (st.gone[p]) {
    view = panel('gone', `${page.title} is gone`, st.gone[p].message,
      h('p', null, 'This page keeps watching and shows it again if it comes back. ',
        h('a', { href: page.list }, `See all ${page.list.slice(2)}`), '.'));
  } else if (!(p in st.data)) {
    const e = st.errors[p];
    view = e ? failure(e) : h('p', { class: 'loading' }, 'Loading…');
  } else {
    const failing = Object.values(st.errors);
    const hidden = Object.values(st.hidden);
    view = h('div', null,
      failing.length ? h('div', { class: 'panel warn stale' },
        h('strong', null, 'Showing the last answer. '), failing[0].err.message, ' Retrying ', when(new Date(failing[0].until)), '.') : null,
      hidden.length ? h('div', { class: 'panel info hidden-parts' },
        h('strong', null, 'Part of this page is hidden: '), hidden[0].message, ' ',
        h('button', { type: 'button', onclick: () => showToken(hidden[0].message) }, 'Enter a token')) : null,
      rendered(page, st));
  }
  main.replaceChildren(view);
}

// rendered is the page's view, or, should it fail on an answer it did
// not expect, the error: never a blank page.
function rendered(page, st) {
  try {
    return page.render(st);
  } catch (e) {
    console.error(e);
    return panel('error', `The UI could not show ${page.title}`, String(e && e.message ? e.message : e),
      h('p', null, 'The API\'s answer is at ', h('code', null, Object.values(page.watches(st))[0]), '.'));
  }
}

function failure(e) {
  const what = e.err.status === 0 ? 'Cannot reach the agent' : `The API answered ${e.err.status}${e.err.code ? ' ' + e.err.code : ''}`;
  return panel('error', what, e.err.message, h('p', null, 'Retrying ', when(new Date(e.until)), '.'));
}

// conn shows whether the last request reached the agent.
const connEl = document.getElementById('conn');
function conn(ok, err) {
  connEl.className = ok ? 'conn live' : 'conn down';
  connEl.textContent = ok ? 'live' : 'reconnecting';
  connEl.title = ok ? 'up to date: blocking queries to this agent' : err.message;
}

// The token box.
const tokenPanel = document.getElementById('token-panel');
const tokenInput = document.getElementById('token-input');
const tokenMessage = document.getElementById('token-message');
const tokenButton = document.getElementById('token-button');

function showToken(message) {
  tokenMessage.textContent = message || '';
  tokenMessage.hidden = !message;
  tokenInput.value = getToken();
  tokenPanel.hidden = false;
  tokenInput.focus();
}

function tokenLabel() {
  tokenButton.textContent = getToken() ? 'ACL token: set' : 'ACL token';
}

tokenButton.addEventListener('click', () => (tokenPanel.hidden ? showToken('') : (tokenPanel.hidden = true)));
document.getElementById('token-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  setToken(tokenInput.value.trim());
  tokenPanel.hidden = true;
  tokenLabel();
  route();
});
document.getElementById('token-clear').addEventListener('click', () => {
  setToken('');
  tokenInput.value = '';
  tokenLabel();
  route();
});
document.getElementById('token-close').addEventListener('click', () => { tokenPanel.hidden = true; });

tokenLabel();
window.addEventListener('hashchange', route);
setInterval(() => refreshTimes(document.body), 1000);
route();
