// Formatting of the API's values for people: times, sizes, IDs, states.

// toDate reads the API's times: RFC 3339 strings (Go's zero time,
// 0001-01-01, is no time) or unix nanoseconds (0 is no time).
export function toDate(v) {
  if (v === null || v === undefined || v === 0 || v === '') return null;
  if (v instanceof Date) return v;
  if (typeof v === 'number') return new Date(v / 1e6);
  if (typeof v === 'string' && v.startsWith('0001-01-01')) return null;
  const d = new Date(v);
  return isNaN(d.getTime()) ? null : d;
}

// relTime says how far d is from now: "in 3s", "12s ago", "5m ago".
export function relTime(d, now = Date.now()) {
  const ms = d.getTime() - now;
  const s = Math.round(Math.abs(ms) / 1000);
  let text;
  if (s < 1) return 'now';
  if (s < 60) text = `${s}s`;
  else if (s < 3600) text = `${Math.floor(s / 60)}m${s % 60 ? ` ${s % 60}s` : ''}`;
  else if (s < 86400) text = `${Math.floor(s / 3600)}h${Math.floor(s / 60) % 60 ? ` ${Math.floor(s / 60) % 60}m` : ''}`;
  else text = `${Math.floor(s / 86400)}d`;
  return ms > 0 ? `in ${text}` : `${text} ago`;
}

// absTime is the local time with its zone, and UTC.
export function absTime(d) {
  return `${d.toLocaleString()} (${d.toISOString().replace('.000Z', 'Z')})`;
}

// bytes shows a size in binary units: "64.0 MiB".
export function bytes(n) {
  if (!n) return '';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return i === 0 ? `${v} B` : `${v.toFixed(1)} ${units[i]}`;
}

// duration shows Go nanoseconds as "1h", "30s"; 0 is "".
export function duration(ns) {
  if (!ns) return '';
  const s = ns / 1e9;
  if (s < 60) return `${+s.toFixed(3)}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${s % 60 ? ` ${Math.round(s % 60)}s` : ''}`;
  return `${Math.floor(s / 3600)}h${Math.floor(s / 60) % 60 ? ` ${Math.floor(s / 60) % 60}m` : ''}`;
}

// shortID is the first 8 characters of a UUID, as the CLI shows them.
export const shortID = (id) => (id && id.length > 8 && id[8] === '-' ? id.slice(0, 8) : id || '');

// segments shows a topology's segments: "zone=a, rack=1".
export function segments(t) {
  const s = t && t.Segments ? Object.entries(t.Segments) : [];
  return s.sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${k}=${v}`).join(', ');
}

// pairs shows a string map as "k=v, k2=v2".
export function pairs(m) {
  return Object.entries(m || {}).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${k}=${v}`).join(', ');
}

// claimStates are a claim's states in their order (structs/csi_claim.go).
export const claimStates = ['taken', 'unpublishing', 'node-detached', 'controller-detached', 'freed'];

// statusKind picks the color of a status word.
export function statusKind(s) {
  switch (s) {
    case 'ready': case 'running': case 'eligible': case 'complete': case 'healthy': case 'freed':
      return 'ok';
    case 'taken':
      return 'info';
    case 'pending': case 'initializing': case 'draining': case 'ineligible': case 'unpublishing':
      return 'warn';
    case 'node-detached': case 'controller-detached':
      return 'progress';
    case 'down': case 'failed': case 'lost': case 'unhealthy':
      return 'bad';
    default:
      return 'neutral';
  }
}

// byKey sorts objects by a string field.
export const byKey = (key) => (a, b) => String(a[key]).localeCompare(String(b[key]));
