// A volume's claims: read, write and past (being released), each with its
// state, attempts, last error and next attempt, linked to its allocation
// and node.
//
// The servers drop a claim once it is freed, so the volume's answer never
// shows "freed". A claimTracker remembers the claims this page has seen:
// one that leaves the volume was freed (the only way out of PastClaims),
// and is shown as freed, with the states seen on the way, until the page
// is left; only the last maxFreed freed claims are kept, so that a page
// left open on a volume whose claims come and go does not grow.
// (GET /v1/event/stream?topic=CSIVolume:ID now says ClaimFreed itself; the
// tracker predates it.)

import { h, badge, idLink, none, table, when } from '../dom.js';
import { claimStates, statusKind } from '../format.js';

// maxFreed is how many freed claims a volume's page remembers.
export const maxFreed = 20;

export class claimTracker {
  constructor() {
    this.seen = new Map(); // alloc ID -> {claim, held, stub, history: [{state, at}], freedAt, freedSeq}
    this.modifyIndex = -1;
    this.freedSeq = 0; // orders the freed claims, newest last
  }

  // update takes a volume answer; an answer already taken is a no-op.
  update(v) {
    if (v.ModifyIndex === this.modifyIndex) return;
    this.modifyIndex = v.ModifyIndex;
    const now = new Set();
    const held = [['write', v.WriteClaims], ['read', v.ReadClaims], ['past', v.PastClaims]];
    for (const [kind, claims] of held) {
      for (const [id, c] of Object.entries(claims || {})) {
        if (!c) continue;
        now.add(id);
        const s = this.seen.get(id) || { history: [] };
        const stub = (v.WriteAllocs || {})[id] || (v.ReadAllocs || {})[id];
        const last = s.history[s.history.length - 1];
        if (!last || last.state !== c.State) s.history.push({ state: c.State, at: c.UpdatedAt });
        Object.assign(s, { claim: c, held: kind, stub: stub || s.stub, freedAt: null });
        this.seen.set(id, s);
      }
    }
    for (const [id, s] of this.seen) {
      if (now.has(id) || s.freedAt) continue;
      s.freedAt = new Date();
      s.freedSeq = ++this.freedSeq;
      s.held = 'past';
      s.claim = { ...s.claim, State: 'freed', LastError: '', NextAttemptAt: '' };
      s.history.push({ state: 'freed', at: s.freedAt });
    }
    const freed = [...this.seen].filter(([, s]) => s.freedAt).sort(([, x], [, y]) => y.freedSeq - x.freedSeq);
    for (const [id] of freed.slice(maxFreed)) this.seen.delete(id);
  }

  // rows of one kind: "write", "read" or "past" (freed ones last).
  rows(kind) {
    const out = [...this.seen.entries()].filter(([, s]) => s.held === kind);
    return out.sort(([a, x], [b, y]) => (!!x.freedAt - !!y.freedAt) || a.localeCompare(b));
  }
}

// claimsSection renders the three claim tables from the tracker.
export function claimsSection(tracker, nodeName) {
  const part = (kind, title, empty) => {
    const rows = tracker.rows(kind);
    return h('div', { class: 'claims', id: `claims-${kind}` },
      h('h3', null, title, ' ', h('span', { class: 'count' }, String(rows.length))),
      table(['Allocation', 'Job', 'Node', 'Mode', 'State', 'Attempts', 'Last error', 'Next attempt', 'Updated'],
        rows.map(([id, s]) => claimRow(id, s, nodeName)), empty));
  };
  return h('section', { class: 'card' },
    h('h2', null, 'Claims'),
    part('write', 'Write claims', 'No writer holds this volume.'),
    part('read', 'Read claims', 'No reader holds this volume.'),
    part('past', 'Past claims', 'No claim is being released.'),
    h('p', { class: 'note' },
      'A released claim moves taken → unpublishing → node-detached → controller-detached → freed. ',
      `The servers drop a claim once it is freed; this page shows the last ${maxFreed} it saw go, until you leave it.`));
}

function claimRow(id, s, nodeName) {
  const c = s.claim;
  const stub = s.stub;
  const err = c.LastError ? h('span', { class: 'error-text' }, c.LastError) : none();
  return {
    attrs: { 'data-claim': id, 'data-state': c.State, class: c.LastError ? 'has-error' : null },
    cells: [
      h('span', null, idLink('allocations', id), stub ? h('span', { class: 'sub' }, stub.Name) : null),
      stub ? idLink('jobs', stub.JobID, stub.JobID) : none(),
      c.NodeID ? idLink('nodes', c.NodeID, nodeName(c.NodeID)) : none(),
      c.Mode,
      stateCell(c.State, s.history),
      { value: String(c.Attempts || 0), attrs: { class: c.Attempts ? 'warn-text' : null } },
      err,
      when(c.NextAttemptAt),
      s.freedAt ? when(s.freedAt) : when(c.UpdatedAt),
    ],
  };
}

// stateCell: the state's badge and a bar of the release steps, the
// states this page saw on hover.
function stateCell(state, history) {
  const at = claimStates.indexOf(state);
  // Steps can pass faster than a read: this is what the page saw, not
  // every step the claim went through (the bar shows those).
  const seen = 'seen here: ' + history.map((x) => x.state).join(' → ');
  return h('div', null,
    h('span', { class: 'claim-state' },
      badge(state, statusKind(state)),
      h('span', { class: 'steps', title: `step ${at + 1} of ${claimStates.length}: ${claimStates.join(' → ')}` },
        claimStates.map((x, i) => h('i', { class: i <= at ? `on s-${statusKind(state)}` : '' })))),
    history.length > 1 ? h('div', { class: 'seen', title: 'the states this page saw' }, seen) : null);
}
