// Allocations: the list, and one allocation with its status, its claims
// on the group's volumes, its task states and task events, and a tail of
// a task's stdout or stderr.

import { h, card, badge, idLink, kv, none, or, pageHead, section, table, when } from '../dom.js';
import { statusKind } from '../format.js';
import { logTail } from './logs.js';

// maxVolumeWatches bounds the volumes an allocation page watches (a
// browser holds about six connections to one host).
const maxVolumeWatches = 3;

export function allocsPage() {
  return {
    title: 'allocations',
    watches: () => ({ allocs: '/v1/allocations' }),
    render(st) {
      const allocs = [...st.data.allocs].sort((a, b) => b.CreateIndex - a.CreateIndex);
      return h('div', null,
        pageHead('Workloads', 'Allocations', badge(String(allocs.length), 'neutral')),
        card(allocTable(allocs, 'No allocation exists.')));
    },
  };
}

// allocTable lists allocation stubs; opts.job or opts.node false leaves
// that column out.
export function allocTable(allocs, empty, opts = {}) {
  const job = opts.job !== false;
  const node = opts.node !== false;
  const head = ['ID', 'Name', job && 'Job', 'Group', node && 'Node', 'Desired', 'Status', 'Version'].filter(Boolean);
  return table(head, allocs.map((a) => ({
    attrs: { 'data-alloc': a.ID },
    cells: [idLink('allocations', a.ID), a.Name, job && idLink('jobs', a.JobID, a.JobID), a.TaskGroup,
      node && idLink('nodes', a.NodeID), desired(a.DesiredStatus), clientStatus(a.ClientStatus),
      { value: String(a.JobVersion), attrs: { class: 'num' } }].filter((c) => c !== false),
  })), empty);
}

const desired = (s, desc) => badge(s, s === 'run' ? 'info' : 'neutral', desc || null);
const clientStatus = (s, desc) => badge(s, statusKind(s), desc || null);

// group is the allocation's task group in its job, or null.
const groupOf = (a) => ((a.Job && a.Job.TaskGroups) || []).find((g) => g.Name === a.TaskGroup) || null;

// volumeSources: the group's volume aliases and the volume ID each names
// for this allocation ("data", or "data[2]" for per_alloc).
function volumeSources(a) {
  const g = groupOf(a);
  const m = a.Name.match(/\[(\d+)\]$/);
  return Object.keys((g && g.Volumes) || {}).sort().map((alias) => {
    const v = g.Volumes[alias];
    return { alias, req: v, id: v.PerAlloc && m ? `${v.Source}[${m[1]}]` : v.Source };
  });
}

export function allocPage(id, signal) {
  const logs = logTail(id, signal);
  return {
    title: `allocation ${id.slice(0, 8)}`,
    watches(st) {
      const w = { alloc: `/v1/allocation/${encodeURIComponent(id)}` };
      const a = st.data.alloc;
      if (a) {
        for (const v of volumeSources(a).slice(0, maxVolumeWatches)) {
          w[`vol:${v.id}`] = `/v1/volume/csi/${encodeURIComponent(v.id)}`;
        }
      }
      return w;
    },
    render(st) {
      const a = st.data.alloc;
      const g = groupOf(a);
      const tasks = [...new Set([...((g && g.Tasks) || []).map((t) => t.Name), ...Object.keys(a.TaskStates || {}).sort()])];
      return h('div', { 'data-alloc': a.ID },
        pageHead('Allocation', a.Name, clientStatus(a.ClientStatus, a.ClientDescription), desired(a.DesiredStatus, a.DesiredDescription)),
        section('Allocation', kv([
          ['ID', h('span', { class: 'mono' }, a.ID)],
          ['Job', h('span', null, idLink('jobs', a.JobID, a.JobID), h('span', { class: 'muted' }, ` version ${a.JobVersion}`))],
          ['Group', a.TaskGroup],
          ['Node', idLink('nodes', a.NodeID)],
          ['Client status', h('span', null, clientStatus(a.ClientStatus), ' ', or(a.ClientDescription))],
          ['Desired status', h('span', null, desired(a.DesiredStatus), ' ', or(a.DesiredDescription))],
          ['Created', when(a.CreateTime)],
          ['Running since', when(a.RunningSince)],
          a.PreviousAllocation ? ['Replaces', idLink('allocations', a.PreviousAllocation)] : null,
        ])),
        section('CSI volumes', claims(a, st)),
        tasks.map((t) => taskCard(t, (a.TaskStates || {})[t])),
        section('Logs', logs.view(tasks)));
    },
  };
}

// claims: each group volume and this allocation's claim on it, read from
// the volume.
function claims(a, st) {
  const rows = volumeSources(a).map((v, i) => {
    const vol = st.data[`vol:${v.id}`];
    let c = null;
    let state = i < maxVolumeWatches ? h('span', { class: 'muted' }, 'loading…') : h('span', { class: 'muted' }, 'see the volume');
    if (st.gone[`vol:${v.id}`]) state = badge('volume not found', 'bad');
    if (st.hidden[`vol:${v.id}`]) state = h('span', { class: 'muted', title: st.hidden[`vol:${v.id}`].message }, 'not shown: the token may not read the volume');
    if (vol) {
      c = [vol.WriteClaims, vol.ReadClaims, vol.PastClaims].map((m) => (m || {})[a.ID]).find(Boolean) || null;
      state = c ? badge(c.State, statusKind(c.State)) : h('span', { class: 'muted' }, 'not claimed (freed, or not yet taken)');
    }
    return {
      attrs: { 'data-volume': v.id },
      cells: [v.alias, idLink('volumes', v.id, v.id), v.req.AccessMode, c ? c.Mode : none(), state,
        c ? String(c.Attempts || 0) : none(), c && c.LastError ? h('span', { class: 'error-text' }, c.LastError) : none(),
        c ? when(c.NextAttemptAt) : none()],
    };
  });
  return table(['Volume', 'Volume ID', 'Access mode', 'Claim mode', 'Claim state', 'Attempts', 'Last error', 'Next attempt'],
    rows, 'The group claims no volume.');
}

function taskCard(name, ts) {
  const state = ts ? ts.State : 'pending';
  const kind = ts && ts.Failed ? 'bad' : state === 'dead' ? 'neutral' : statusKind(state);
  const events = [...((ts && ts.Events) || [])].reverse();
  return h('section', { class: 'card', 'data-task': name },
    h('h2', null, `Task "${name}" `, badge(state, kind), ts && ts.Failed ? ' ' : null, ts && ts.Failed ? badge('failed', 'bad') : null),
    ts ? kv([
      ['Started', when(ts.StartedAt)],
      ['Finished', when(ts.FinishedAt)],
      ['Restarts', String(ts.Restarts)],
    ]) : null,
    table(['Time', 'Type', 'Message'], events.map((e) => [when(e.Time), h('span', { class: 'event-type' }, e.Type), e.Message]),
      'No events yet.'));
}
