// A volume's usage and condition, as the node plugin of each claim last
// reported them (NodeGetVolumeStats, NodeGetVolumeHealth): the client
// asks every volume_stats_interval and sends only what changed.

import { h, badge, idLink, none, table, when } from '../dom.js';
import { bytes } from '../format.js';

// usageSection renders one row per claim with a report; a note when the
// volume's claims have none.
export function usageSection(v, nodeName) {
  const rows = [];
  for (const claims of [v.WriteClaims, v.ReadClaims, v.PastClaims]) {
    for (const [id, c] of Object.entries(claims || {})) {
      if (c && c.Usage) rows.push([id, c]);
    }
  }
  rows.sort(([a], [b]) => a.localeCompare(b));
  return h('section', { class: 'card', id: 'usage' },
    h('h2', null, 'Usage'),
    table(['Node', 'Allocation', 'Used', 'Capacity', 'Inodes', 'Condition', 'Collected'],
      rows.map(([id, c]) => usageRow(id, c, nodeName)),
      'No usage reported: no allocation holds the volume, its plugin offers no stats, or none was collected yet.'));
}

function usageRow(id, c, nodeName) {
  const u = c.Usage;
  const b = u.Bytes;
  const share = b && b.Total ? ` (${Math.round((100 * b.Used) / b.Total)}%)` : '';
  return {
    attrs: { 'data-alloc': id, 'data-abnormal': String(!!(u.Condition && u.Condition.Abnormal)) },
    cells: [
      c.NodeID ? idLink('nodes', c.NodeID, nodeName(c.NodeID)) : none(),
      idLink('allocations', id),
      b ? { value: (bytes(b.Used) || '0 B') + share, attrs: { class: 'num used' } } : none(),
      b ? { value: bytes(b.Total) || '0 B', attrs: { class: 'num' } } : none(),
      u.Inodes ? { value: `${u.Inodes.Used} of ${u.Inodes.Total}`, attrs: { class: 'num' } } : none(),
      condition(u),
      when(u.CollectedAt),
    ],
  };
}

function condition(u) {
  if (u.Error) return h('span', { class: 'error-text' }, `collection failed: ${u.Error}`);
  if (!u.Condition) return h('span', { class: 'muted' }, 'not reported');
  if (u.Condition.Abnormal) return h('span', null, badge('abnormal', 'bad'), ' ', h('span', { class: 'error-text' }, u.Condition.Message || ''));
  return badge('normal', 'ok');
}
