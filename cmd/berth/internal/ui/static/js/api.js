// The HTTP API, as the CLI reads it: GETs with the ACL token in
// X-Berth-Token, errors as {Code, Message}, and blocking queries
// (?index=N&wait=30s, the answer's index in X-Berth-Index).

const tokenKey = 'berth.token';

export const getToken = () => localStorage.getItem(tokenKey) || '';

export function setToken(t) {
  if (t) localStorage.setItem(tokenKey, t);
  else localStorage.removeItem(tokenKey);
}

// APIError is a failed request: status 0 when the agent could not be
// reached, else the HTTP status with the server's Code and Message.
export class APIError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

// get fetches path from this agent. It resolves to the Response of a
// 2xx answer and rejects with an APIError otherwise.
export async function get(path, signal) {
  const headers = {};
  const token = getToken();
  if (token) headers['X-Berth-Token'] = token;
  let res;
  try {
    res = await fetch(path, { headers, signal, cache: 'no-store' });
  } catch (e) {
    if (signal && signal.aborted) throw e;
    throw new APIError(0, 'Unreachable',
      `Cannot reach the berth agent at ${location.host} (${e.message}): is it running?`);
  }
  if (res.ok) return res;
  const text = await res.text().catch(() => '');
  let code = '';
  let message = text.trim() || res.statusText;
  try {
    const body = JSON.parse(text);
    if (body && body.Message) ({ Code: code, Message: message } = body);
  } catch (_) { /* not JSON: the text is the message */ }
  const err = new APIError(res.status, code, message);
  err.index = Number(res.headers.get('X-Berth-Index')) || 0;
  throw err;
}

// sleep waits ms, or until signal aborts. Its abort listener goes with
// it: a page polls for as long as it is open, on one signal.
export function sleep(ms, signal) {
  return new Promise((resolve) => {
    if (signal && signal.aborted) { resolve(); return; }
    const done = () => {
      clearTimeout(t);
      if (signal) signal.removeEventListener('abort', done);
      resolve();
    };
    const t = setTimeout(done, ms);
    if (signal) signal.addEventListener('abort', done, { once: true });
  });
}

// backoff is the wait before retry n (1, 2, ...): 0.5 s doubling to 30 s,
// with 20% jitter.
export function backoff(n) {
  const base = Math.min(30000, 500 * 2 ** (n - 1));
  return Math.round(base * (0.8 + 0.4 * Math.random()));
}

export const waitTime = '30s';

// watch runs a blocking query on path until signal aborts, and tells on:
//   on.data(body)         each new answer (a changed X-Berth-Index);
//   on.gone(err)          a 404: the object does not exist (or is deleted);
//                         it keeps watching, and data follows if it returns;
//   on.denied(err)        a 403: it stops; a new token starts a new watch;
//   on.error(err, ms)     anything else (agent gone, 503, 500): it retries
//                         after ms, with backoff.
export async function watch(path, signal, on) {
  const sep = path.includes('?') ? '&' : '?';
  let index = 0;
  let failures = 0;
  let first = true;
  while (!signal.aborted) {
    const url = index > 0 ? `${path}${sep}index=${index}&wait=${waitTime}` : path;
    const started = Date.now();
    try {
      const res = await get(url, signal);
      const body = await res.json();
      const next = Number(res.headers.get('X-Berth-Index')) || 0;
      failures = 0;
      // An index that went back (a restored snapshot) starts over.
      const changed = first || next !== index;
      index = next < index ? 0 : next;
      first = false;
      if (changed) on.data(body);
      else if (Date.now() - started < 250) await sleep(1000, signal); // an answer that did not block
    } catch (e) {
      if (signal.aborted) return;
      if (!(e instanceof APIError)) {
        // The body was cut off or was not JSON: retry as a failure.
        e = new APIError(0, 'BadAnswer', `reading ${path}: ${e.message}`);
      }
      if (e.status === 403) {
        on.denied(e);
        return;
      }
      if (e.status === 404) {
        failures = 0;
        first = true;
        // Wait for the object's table to change, or, where the answer did
        // not block, a while.
        const stuck = Date.now() - started < 250 && (e.index || 0) <= index;
        index = e.index || 0;
        on.gone(e);
        if (stuck) await sleep(2000, signal);
        continue;
      }
      // After a failure the state is unknown (the agent may have come
      // back with another): ask without an index first.
      index = 0;
      first = true;
      failures++;
      const ms = backoff(failures);
      on.error(e, ms);
      await sleep(ms, signal);
    }
  }
}
