// The tail of a task's stdout or stderr, read from
// /v1/client/fs/logs/:alloc?task=&type=&offset= every pollMs while the
// page is open. Logs are files on the client, not raft state: they have
// no blocking query, so this polls from the last offset read.

import { get, backoff, sleep } from '../api.js';
import { h } from '../dom.js';

const tailBytes = 64 * 1024; // what is shown, at most
const pollMs = 2000;

// logTail makes the log view of one allocation. view(tasks) returns the
// same element on every render, so that the text read so far, the
// choices and the scroll position live across re-renders; reading starts
// with the first view and ends when page (the page's signal) aborts.
export function logTail(allocID, page) {
  let task = '';
  let kind = 'stdout';
  let ctl = null;
  let tasks = [];
  let scroll = null; // the scroll position to keep; null: follow the end
  const pre = h('pre', { class: 'log', id: 'log', tabindex: '0' });
  const status = h('span', { class: 'log-status muted' });
  const bar = h('div', { class: 'log-bar' });
  const el = h('div', { class: 'logs' }, bar, pre);

  pre.addEventListener('scroll', () => {
    const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    scroll = atEnd ? null : pre.scrollTop;
  });

  const choose = (t, k) => {
    task = t;
    kind = k;
    drawBar();
    restart();
  };

  function drawBar() {
    const tab = (label, on, fn, attrs) => h('button', { type: 'button', class: on ? 'tab on' : 'tab', onclick: fn, ...attrs }, label);
    bar.replaceChildren(
      ...tasks.map((t) => tab(t, t === task, () => choose(t, kind), { 'data-task': t })),
      h('span', { class: 'sep' }),
      tab('stdout', kind === 'stdout', () => choose(task, 'stdout')),
      tab('stderr', kind === 'stderr', () => choose(task, 'stderr')),
      status);
  }

  function restart() {
    if (ctl) ctl.abort();
    if (page.aborted) return;
    ctl = new AbortController();
    const c = ctl;
    page.addEventListener('abort', () => c.abort(), { once: true });
    pre.textContent = '';
    scroll = null;
    if (task) follow(ctl.signal);
  }

  async function follow(signal) {
    const base = `/v1/client/fs/logs/${encodeURIComponent(allocID)}?task=${encodeURIComponent(task)}&type=${kind}`;
    const decoder = new TextDecoder();
    let offset = -1;
    let failures = 0;
    while (!signal.aborted) {
      try {
        if (offset < 0) {
          // The size first (an offset past the end reads nothing), to read
          // only the tail.
          const res = await get(`${base}&offset=${Number.MAX_SAFE_INTEGER}`, signal);
          offset = Math.max(0, (Number(res.headers.get('X-Berth-Log-Size')) || 0) - tailBytes);
        }
        const res = await get(`${base}&offset=${offset}`, signal);
        const buf = new Uint8Array(await res.arrayBuffer());
        offset += buf.length;
        failures = 0;
        if (buf.length) {
          let text = pre.textContent + decoder.decode(buf, { stream: true });
          if (text.length > tailBytes) text = text.slice(text.length - tailBytes);
          pre.textContent = text;
          keepScroll();
        }
        status.textContent = pre.textContent ? `${task} ${kind}, live` : `${task} ${kind} is empty`;
        await sleep(pollMs, signal);
      } catch (e) {
        if (signal.aborted) return;
        failures++;
        const ms = e.status === 404 ? pollMs * 2 : backoff(failures);
        status.textContent = `${e.message}; retrying in ${Math.round(ms / 1000)}s`;
        await sleep(ms, signal);
      }
    }
  }

  function keepScroll() {
    pre.scrollTop = scroll === null ? pre.scrollHeight : scroll;
  }

  return {
    view(names) {
      if (names.join('\n') !== tasks.join('\n')) {
        tasks = names;
        if (!task || !tasks.includes(task)) {
          task = tasks[0] || '';
          drawBar();
          restart();
        } else drawBar();
      }
      requestAnimationFrame(keepScroll); // re-attached: put the scroll back
      return el;
    },
  };
}
