// Volumes: the list, and one volume with its capability, capacity,
// topology, schedulability, usage and every claim.

import { h, card, badge, healthCount, idLink, kv, none, or, pageHead, section, table } from '../dom.js';
import { byKey, bytes, pairs, segments } from '../format.js';
import { claimTracker, claimsSection } from './claims.js';
import { usageSection } from './usage.js';

// nodeNamer names nodes from a /v1/nodes answer, by short ID when unknown.
export function nodeNamer(nodes) {
  const names = new Map((nodes || []).map((n) => [n.ID, n.Name]));
  return (id) => names.get(id) || (id || '').slice(0, 8);
}

export function volumesPage() {
  return {
    title: 'volumes',
    watches: () => ({ volumes: '/v1/volumes?type=csi' }),
    render(st) {
      const vols = [...st.data.volumes].sort(byKey('ID'));
      return h('div', null,
        pageHead('CSI', 'Volumes', badge(String(vols.length), 'neutral')),
        card(volumeTable(vols, 'No volumes are registered. Create one with `berth volume create FILE`.')));
    },
  };
}

// volumeTable lists volume stubs.
export function volumeTable(vols, empty) {
  return table(['ID', 'Name', 'Plugin', 'Schedulable', 'Access mode', 'Attachment mode', 'Writers', 'Readers', 'Controllers', 'Nodes'],
    vols.map((v) => ({
      attrs: { 'data-volume': v.ID },
      cells: [
        idLink('volumes', v.ID, v.ID), v.Name, idLink('plugins', v.PluginID, v.PluginID),
        schedulable(v.Schedulable), or(v.AccessMode), or(v.AttachmentMode),
        num(v.CurrentWriters), num(v.CurrentReaders),
        healthCount(v.ControllersHealthy, v.ControllersExpected), healthCount(v.NodesHealthy, v.NodesExpected),
      ],
    })), empty);
}

const num = (n) => ({ value: String(n || 0), attrs: { class: 'num' } });

const schedulable = (ok) =>
  badge(ok ? 'schedulable' : 'unschedulable', ok ? 'ok' : 'bad',
    ok ? 'a healthy node plugin (and controller, where required) can serve it' : 'no healthy plugin can serve it now');

export function volumePage(id) {
  const tracker = new claimTracker();
  return {
    title: `volume "${id}"`,
    watches: () => ({
      volume: `/v1/volume/csi/${encodeURIComponent(id)}`,
      nodes: '/v1/nodes',
    }),
    render(st) {
      const v = st.data.volume;
      tracker.update(v);
      const inUse = v.AccessMode ? badge(`${v.AccessMode} · ${v.AttachmentMode}`, 'info', 'the modes its claims use') : null;
      return h('div', { class: 'volume', 'data-volume': v.ID },
        pageHead('Volume', v.ID, schedulable(v.Schedulable), inUse),
        h('div', { class: 'grid' },
          section('Volume', kv([
            ['ID', h('span', { class: 'mono' }, v.ID)],
            ['Name', v.Name],
            ['Namespace', v.Namespace],
            ['External ID', h('span', { class: 'mono' }, v.ExternalID)],
            ['Capacity', capacity(v)],
            ['Topology', topologies(v.Topologies)],
            ['Mount options', mountOptions(v.MountOptions)],
            v.SnapshotID ? ['From snapshot', v.SnapshotID] : null,
            v.CloneID ? ['Cloned from', idLink('volumes', v.CloneID, v.CloneID)] : null,
            Object.keys(v.Parameters || {}).length ? ['Parameters', pairs(v.Parameters)] : null,
            Object.keys(v.Context || {}).length ? ['Context', pairs(v.Context)] : null,
          ])),
          section('Plugin and capability', kv([
            ['Plugin', h('span', null, idLink('plugins', v.PluginID, v.PluginID), ' ',
              h('span', { class: 'muted' }, [v.Provider, v.ProviderVersion].filter(Boolean).join(' ')))],
            ['Controllers', v.ControllerRequired ? healthCount(v.ControllersHealthy, v.ControllersExpected) : h('span', { class: 'muted' }, 'not required')],
            ['Nodes', healthCount(v.NodesHealthy, v.NodesExpected)],
            ['Capabilities', capabilities(v.RequestedCapabilities)],
            ['Access mode in use', or(v.AccessMode)],
            ['Attachment mode in use', or(v.AttachmentMode)],
          ]))),
        usageSection(v, nodeNamer(st.data.nodes)),
        claimsSection(tracker, nodeNamer(st.data.nodes)));
    },
  };
}

function capacity(v) {
  const range = [v.RequestedCapacityMin, v.RequestedCapacityMax].map((n) => bytes(n) || 'any');
  const asked = v.RequestedCapacityMin || v.RequestedCapacityMax ? `requested ${range.join(' – ')}` : '';
  return h('span', null, bytes(v.Capacity) || 'unknown', asked ? h('span', { class: 'muted' }, ` (${asked})`) : null);
}

function capabilities(caps) {
  if (!caps || !caps.length) return none();
  return h('ul', { class: 'plain' }, caps.map((c) => h('li', null, c.AccessMode, h('span', { class: 'muted' }, ' · '), c.AttachmentMode)));
}

function topologies(ts) {
  if (!ts || !ts.length) return h('span', { class: 'muted' }, 'any node');
  return h('ul', { class: 'plain' }, ts.map((t) => h('li', { class: 'mono' }, segments(t))));
}

function mountOptions(o) {
  if (!o || (!o.FSType && !(o.MountFlags || []).length)) return none();
  return [o.FSType ? `fs ${o.FSType}` : '', (o.MountFlags || []).length ? `flags ${o.MountFlags.join(', ')}` : '']
    .filter(Boolean).join('; ');
}
