// Jobs: the list, and one job with its groups, their volumes and tasks,
// and its allocations.

import { h, card, badge, idLink, kv, none, pageHead, pending, section, table, when } from '../dom.js';
import { byKey, statusKind } from '../format.js';
import { allocTable } from './allocs.js';

export function jobsPage() {
  return {
    title: 'jobs',
    watches: () => ({ jobs: '/v1/jobs' }),
    render(st) {
      const jobs = [...st.data.jobs].sort(byKey('ID'));
      return h('div', null,
        pageHead('Workloads', 'Jobs', badge(String(jobs.length), 'neutral')),
        card(table(['ID', 'Namespace', 'Type', 'Status'],
          jobs.map((j) => ({
            attrs: { 'data-job': j.ID },
            cells: [idLink('jobs', j.ID, j.ID), j.Namespace, j.Type, jobStatus(j)],
          })), 'No job is registered. Run one with `berth job run FILE`.')));
    },
  };
}

// jobStatus: the list's Status, or on the job's page (whose answer has
// none) what its allocations say: running while one runs, pending while
// one is to start, dead when all are over.
const jobStatus = (j, allocs) => {
  let s = j.Status;
  if (j.Stop) s = 'stopped';
  else if (!s && allocs) {
    const live = allocs.filter((a) => a.DesiredStatus === 'run');
    s = live.some((a) => a.ClientStatus === 'running') ? 'running'
      : live.some((a) => a.ClientStatus === 'pending') || !allocs.length ? 'pending' : 'dead';
  }
  return s ? badge(s, s === 'stopped' || s === 'dead' ? 'neutral' : statusKind(s)) : null;
};

export function jobPage(id) {
  return {
    title: `job "${id}"`,
    watches: () => ({
      job: `/v1/job/${encodeURIComponent(id)}`,
      allocs: `/v1/job/${encodeURIComponent(id)}/allocations`,
    }),
    render(st) {
      const j = st.data.job;
      const allocs = st.data.allocs && [...st.data.allocs].sort((a, b) => b.CreateIndex - a.CreateIndex);
      return h('div', { 'data-job': j.ID },
        pageHead('Job', j.ID, jobStatus(j, st.data.allocs), badge(j.Type, 'neutral')),
        section('Job', kv([
          ['ID', j.ID],
          ['Name', j.Name],
          ['Namespace', j.Namespace],
          ['Type', j.Type],
          ['Version', String(j.Version)],
          ['Submitted', when(j.SubmitTime)],
          ['Stopped', j.Stop ? 'yes: its allocations stop and release their volumes' : 'no'],
        ])),
        (j.TaskGroups || []).map((g) => group(g)),
        section('Allocations', allocs ? allocTable(allocs, 'The job has no allocation.', { job: false }) : pending(st, 'allocs')));
    },
  };
}

function group(g) {
  const vols = Object.keys(g.Volumes || {}).sort();
  return section(`Group "${g.Name}" × ${g.Count}`,
    h('h3', null, 'Volumes'),
    table(['Name', 'Volume', 'Access mode', 'Attachment mode', 'Read only', 'Per alloc'], vols.map((name) => {
      const v = g.Volumes[name];
      return [name, v.PerAlloc ? `${v.Source}[n]` : idLink('volumes', v.Source, v.Source), v.AccessMode, v.AttachmentMode,
        v.ReadOnly ? 'yes' : 'no', v.PerAlloc ? 'yes' : 'no'];
    }), 'The group claims no volume.'),
    h('h3', null, 'Tasks'),
    table(['Task', 'Driver', 'Command', 'Volume mounts', 'CSI plugin'], (g.Tasks || []).map((t) => [
      t.Name, t.Driver, command(t.Config),
      (t.VolumeMounts || []).map((m) => h('div', null, m.Volume, h('span', { class: 'muted' }, ` at ${m.Destination}${m.ReadOnly ? ' (ro)' : ''}`))),
      t.CSIPluginConfig ? `${t.CSIPluginConfig.ID} (${t.CSIPluginConfig.Type})` : none(),
    ]), 'No task.'));
}

function command(cfg) {
  if (!cfg) return none();
  const cmd = cfg.command || cfg.image || '';
  const args = (cfg.args || []).join(' ');
  return h('code', { class: 'cmd', title: `${cmd} ${args}` }, `${cmd} ${args}`.trim() || '—');
}
