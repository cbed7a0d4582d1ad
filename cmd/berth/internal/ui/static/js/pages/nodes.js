// Nodes: the list, and one node with its status, eligibility and drain,
// its CSI plugins with their health, the volumes in use there, its
// allocations and its events.

import { h, card, badge, healthBadge, idLink, kv, none, or, pageHead, pending, section, table, when } from '../dom.js';
import { byKey, duration, segments, statusKind } from '../format.js';
import { volumeTable } from './volumes.js';
import { allocTable } from './allocs.js';

export function nodesPage() {
  return {
    title: 'nodes',
    watches: () => ({ nodes: '/v1/nodes' }),
    render(st) {
      const nodes = [...st.data.nodes].sort(byKey('Name'));
      return h('div', null,
        pageHead('Cluster', 'Nodes', badge(String(nodes.length), 'neutral')),
        card(table(['ID', 'Name', 'Datacenter', 'Status', 'Eligibility', 'Drain', 'CSI plugins'],
          nodes.map((n) => ({
            attrs: { 'data-node': n.ID },
            cells: [idLink('nodes', n.ID), n.Name, n.Datacenter, status(n.Status, n.StatusDescription),
              eligibility(n.SchedulingEligibility), n.Drain ? badge('draining', 'warn') : h('span', { class: 'muted' }, 'no'),
              pluginDots(n)],
          })), 'No client has registered.')));
    },
  };
}

const status = (s, desc) => badge(s, statusKind(s), desc || null);
const eligibility = (e) => badge(e, e === 'eligible' ? 'ok' : 'warn');

// pluginDots lists a node's plugins, each with its health.
function pluginDots(n) {
  const ids = [...new Set([...Object.keys(n.CSIControllerPlugins || {}), ...Object.keys(n.CSINodePlugins || {})])].sort();
  if (!ids.length) return none();
  return h('span', { class: 'dots' }, ids.map((id) => {
    const infos = [(n.CSIControllerPlugins || {})[id], (n.CSINodePlugins || {})[id]].filter(Boolean);
    const healthy = infos.every((i) => i.Healthy);
    return h('a', { href: `#/plugins/${encodeURIComponent(id)}`, class: `dot ${healthy ? 'ok' : 'bad'}`,
      title: infos.map((i) => i.HealthDescription).join('; ') }, id);
  }));
}

export function nodePage(id) {
  return {
    title: `node ${id.slice(0, 8)}`,
    watches: () => ({
      node: `/v1/node/${encodeURIComponent(id)}`,
      volumes: `/v1/volumes?type=csi&node_id=${encodeURIComponent(id)}`,
      allocs: '/v1/allocations',
    }),
    render(st) {
      const n = st.data.node;
      const allocs = st.data.allocs && st.data.allocs.filter((a) => a.NodeID === n.ID).sort((a, b) => b.CreateIndex - a.CreateIndex);
      return h('div', { 'data-node': n.ID },
        pageHead('Node', n.Name || n.ID, status(n.Status, n.StatusDescription), eligibility(n.SchedulingEligibility),
          n.DrainStrategy ? badge('draining', 'warn') : null),
        h('div', { class: 'grid' },
          section('Node', kv([
            ['ID', h('span', { class: 'mono' }, n.ID)],
            ['Name', n.Name],
            ['Datacenter', n.Datacenter],
            ['HTTP address', or(n.HTTPAddr)],
            ['Status', h('span', null, status(n.Status), ' ', or(n.StatusDescription))],
            ['Status since', when(n.StatusUpdatedAt)],
            ['Eligibility', eligibility(n.SchedulingEligibility)],
            ['Drain', drain(n.DrainStrategy)],
            ['Root tasks', n.AllowRootTasks ? 'allowed' : 'not allowed'],
          ])),
          section('Task drivers', drivers(n.Drivers))),
        section('CSI plugins', plugins(n)),
        section('Volumes in use', st.data.volumes ? volumeTable(st.data.volumes, 'No volume is claimed on this node.') : pending(st, 'volumes')),
        section('Allocations', allocs ? allocTable(allocs, 'No allocation is placed on this node.', { node: false }) : pending(st, 'allocs')),
        section('Events', events(n.Events)));
    },
  };
}

function drain(d) {
  if (!d) return h('span', { class: 'muted' }, 'none');
  return h('span', null, badge('draining', 'warn'), ' since ', when(d.StartedAt),
    d.ForceDeadline && !String(d.ForceDeadline).startsWith('0001') ? [', deadline ', when(d.ForceDeadline)] : ', no deadline',
    d.Deadline ? ` (${duration(d.Deadline)})` : '', d.IgnoreSystemJobs ? ', system jobs stay' : '');
}

function drivers(ds) {
  const names = Object.keys(ds || {}).sort();
  return table(['Driver', 'Detected', 'Health', 'Description', 'Updated'], names.map((name) => {
    const d = ds[name];
    return [name, d.Detected ? 'yes' : 'no', healthBadge(d.Healthy, d.HealthDescription), or(d.HealthDescription), when(d.UpdateTime)];
  }), 'No driver reported.');
}

// plugins: one row per plugin and role on this node.
function plugins(n) {
  const rows = [];
  for (const [role, m] of [['controller', n.CSIControllerPlugins], ['node', n.CSINodePlugins]]) {
    for (const id of Object.keys(m || {}).sort()) {
      const p = m[id];
      const topo = p.NodeInfo && p.NodeInfo.AccessibleTopology ? segments(p.NodeInfo.AccessibleTopology) : '';
      rows.push({
        attrs: { 'data-plugin': id, 'data-role': role },
        cells: [idLink('plugins', id, id), role, p.Provider, p.ProviderVersion, healthBadge(p.Healthy, p.HealthDescription),
          or(p.HealthDescription), p.AllocID ? idLink('allocations', p.AllocID) : h('span', { class: 'muted' }, 'agent config'),
          role === 'node' ? or(topo) : none(), when(p.UpdateTime)],
      });
    }
  }
  return table(['Plugin', 'Role', 'Provider', 'Version', 'Health', 'Description', 'Allocation', 'Topology', 'Updated'],
    rows, 'No CSI plugin runs on this node.');
}

function events(evs) {
  const list = [...(evs || [])].reverse();
  return table(['Time', 'Subsystem', 'Message'], list.map((e) => [when(e.Timestamp), e.Subsystem, e.Message]), 'No events.');
}
