// Plugins: the list, and one plugin with its health per node, the
// controller/node split, its allocations and its volumes.

import { h, card, badge, healthBadge, healthCount, idLink, kv, none, or, pageHead, pending, section, table, when } from '../dom.js';
import { byKey, segments } from '../format.js';
import { nodeNamer, volumeTable } from './volumes.js';
import { allocTable } from './allocs.js';

export function pluginsPage() {
  return {
    title: 'plugins',
    watches: () => ({ plugins: '/v1/plugins?type=csi' }),
    render(st) {
      const ps = [...st.data.plugins].sort(byKey('ID'));
      return h('div', null,
        pageHead('CSI', 'Plugins', badge(String(ps.length), 'neutral')),
        card(table(['ID', 'Provider', 'Controllers healthy/expected', 'Nodes healthy/expected'],
          ps.map((p) => ({
            attrs: { 'data-plugin': p.ID },
            cells: [idLink('plugins', p.ID, p.ID), p.Provider,
              p.ControllerRequired ? healthCount(p.ControllersHealthy, p.ControllersExpected) : h('span', { class: 'muted' }, 'not required'),
              healthCount(p.NodesHealthy, p.NodesExpected)],
          })), 'No CSI plugin has reported. Run one as a task (csi_plugin block) or name one in a client\'s config.')));
    },
  };
}

export function pluginPage(id) {
  return {
    title: `plugin "${id}"`,
    watches: () => ({
      plugin: `/v1/plugin/csi/${encodeURIComponent(id)}`,
      nodes: '/v1/nodes',
      volumes: `/v1/volumes?type=csi&plugin_id=${encodeURIComponent(id)}`,
    }),
    render(st) {
      const p = st.data.plugin;
      const name = nodeNamer(st.data.nodes);
      return h('div', { 'data-plugin': p.ID },
        pageHead('Plugin', p.ID,
          p.ControllerRequired ? h('span', { class: 'split' }, 'controllers ', healthCount(p.ControllersHealthy, p.ControllersExpected)) : null,
          h('span', { class: 'split' }, 'nodes ', healthCount(p.NodesHealthy, p.NodesExpected))),
        section('Plugin', kv([
          ['ID', p.ID],
          ['Provider', h('span', null, or(p.Provider), ' ', h('span', { class: 'muted' }, p.Version || ''))],
          ['Controller required', p.ControllerRequired ? 'yes' : 'no'],
          ['Controllers', healthCount(p.ControllersHealthy, p.ControllersExpected)],
          ['Nodes', healthCount(p.NodesHealthy, p.NodesExpected)],
        ])),
        h('div', { class: 'grid' },
          section('Controllers', instances(p.Controllers, name, 'controller', 'No controller instance runs.')),
          section('Node instances', instances(p.Nodes, name, 'node', 'No node instance runs.'))),
        section('Allocations', allocTable(p.Allocations || [], 'No allocation runs this plugin: it is run by the agents\' config.')),
        section('Volumes', st.data.volumes ? volumeTable(st.data.volumes, 'No volume uses this plugin.') : pending(st, 'volumes')));
    },
  };
}

// instances: the plugin on each node, with its health.
function instances(m, name, role, empty) {
  const ids = Object.keys(m || {}).sort((a, b) => name(a).localeCompare(name(b)));
  const head = ['Node', 'Health', 'Description', 'Allocation', role === 'node' ? 'Topology' : 'Capabilities', 'Updated'];
  return table(head, ids.map((nodeID) => {
    const i = m[nodeID];
    return {
      attrs: { 'data-node': nodeID, 'data-healthy': String(!!i.Healthy) },
      cells: [idLink('nodes', nodeID, name(nodeID)), healthBadge(i.Healthy, i.HealthDescription), or(i.HealthDescription),
        i.AllocID ? idLink('allocations', i.AllocID) : h('span', { class: 'muted' }, 'agent config'),
        role === 'node' ? nodeInfo(i.NodeInfo) : controllerCaps(i.ControllerInfo), when(i.UpdateTime)],
    };
  }), empty);
}

function nodeInfo(n) {
  if (!n) return none();
  const parts = [n.AccessibleTopology ? segments(n.AccessibleTopology) : 'any', n.MaxVolumes ? `max ${n.MaxVolumes} volumes` : ''];
  return parts.filter(Boolean).join('; ');
}

// controllerCaps names what the controller supports, briefly.
function controllerCaps(c) {
  if (!c) return none();
  const names = { SupportsCreateDelete: 'create', SupportsAttachDetach: 'attach', SupportsCreateDeleteSnapshot: 'snapshot',
    SupportsClone: 'clone', SupportsExpand: 'expand', SupportsListVolumes: 'list' };
  const on = Object.entries(names).filter(([k]) => c[k]).map(([, v]) => v);
  return on.length ? h('span', { class: 'muted' }, on.join(', ')) : none();
}
