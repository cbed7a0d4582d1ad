package spec

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/berth-csi/berth/structs"
)

// ParseJobFile reads and parses the job spec at path.
func ParseJobFile(path string) (*structs.Job, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read job spec: %w; check the file's path", err)
	}
	return ParseJob(path, src)
}

// ParseJob parses a job spec: the API's JSON form of a job when filename
// ends in .json or the text starts with '{', HCL otherwise. filename only
// names the file in errors. The error, if any, is one *Error or several
// joined, each naming the file, the line and the field. The job comes back
// with every default applied (see docs/job-spec.md) and checked as far as
// a spec can be without a server: it does not know whether the volumes or
// the nodes exist.
func ParseJob(filename string, src []byte) (*structs.Job, error) {
	p := &parser{file: filename, noun: "job"}
	if len(bytes.TrimSpace(src)) == 0 {
		p.errorf(1, "job", `the job spec is empty; it needs a job "name" { ... } block, holding a group "name" { ... } block that holds a task "name" { ... } block`)
		return nil, joinErrors(p.errs)
	}
	root, fromJSON := p.read(src)
	if root != nil && fromJSON {
		root = p.pascalJob(root)
	}
	if root == nil || len(p.errs) > 0 {
		return nil, joinErrors(p.errs)
	}
	job := p.jobFile(root)
	if err := joinErrors(p.errs); err != nil {
		return nil, err
	}
	return job, nil
}

var (
	jobTypes       = []string{structs.JobTypeService, structs.JobTypeBatch, structs.JobTypeSystem}
	jobFields      = []string{"type", "name", "namespace", "group", "constraint", "affinity", "spread"}
	groupFields    = []string{"count", "volume", "task", "disconnect", "update", "reschedule", "migrate", "constraint", "affinity", "spread"}
	disconnectKeys = []string{"stop_on_client"}
	volumeReqField = []string{"type", "source", "access_mode", "attachment_mode", "read_only", "per_alloc", "mount_options"}
)

// jobFile finds the one job block of a file and decodes it.
func (p *parser) jobFile(root *node) *structs.Job {
	var job *structs.Job
	firstLine := 0
	for _, f := range root.fields {
		if f.name != "job" {
			if suggest(f.name, []string{"job"}) == "job" {
				p.errorf(f.line, f.name, `unknown field %q; did you mean "job"?`, f.name)
				continue
			}
			p.errorf(f.line, f.name, `%q is outside the job block; a job spec holds one job "name" { ... } block with everything inside it`, f.name)
			continue
		}
		if firstLine > 0 {
			p.errorf(f.line, "job", "job: a spec holds one job, but a second one starts here (the first is at line %d)", firstLine)
			continue
		}
		firstLine = f.line
		id, ok := p.label(f, scope{})
		if !ok {
			continue
		}
		p.checkName(f.line, scope{}.sub("job"), structs.NameJobID, id)
		job = p.job(f, id)
	}
	if firstLine == 0 {
		p.errorf(1, "job", `no job block; a job spec holds one job "name" { ... } block, with its groups and their tasks inside it`)
	}
	return job
}

// job decodes the job block. Groups are decoded after the job's own
// fields, wherever they appear, because their defaults and checks depend
// on the job's type.
func (p *parser) job(jf *field, id string) *structs.Job {
	s := scope{human: fmt.Sprintf("job %q", id), dotted: "job"}
	job := &structs.Job{ID: id, Type: structs.JobTypeService}
	seen := map[string]int{}
	var pl placement
	var groups []*field
	guessedGroup := false // a misspelt group block was reported
	for _, f := range jf.val.fields {
		if f.val.kind == kindNull {
			continue
		}
		if f.name == "group" {
			groups = append(groups, f)
			continue
		}
		if p.placementField(&pl, f, s) {
			continue
		}
		if !p.once(seen, f, s) {
			continue
		}
		switch f.name {
		case "type":
			if t, ok := p.oneOf(f, s, jobTypes); ok {
				job.Type = t
			}
		case "name":
			job.Name, _ = p.str(f, s)
		case "namespace":
			if ns, ok := p.str(f, s); ok && ns != "" {
				p.checkName(f.line, s.sub("namespace"), structs.NameNamespace, ns)
				job.Namespace = ns
			}
		default:
			guessedGroup = guessedGroup || p.unknown(f, s, jobFields) == "group"
		}
	}
	if job.Name == "" {
		job.Name = id
	}
	job.Constraints, job.Affinities, job.Spreads = pl.constraints, pl.affinities, pl.spreads
	if len(groups) == 0 && !guessedGroup {
		p.badIn(jf.line, s, `has no group; add a group "name" { ... } block holding a task "name" { ... } block`)
	}
	names := map[string]int{}
	for _, f := range groups {
		name, ok := p.label(f, scope{})
		if !ok {
			continue
		}
		if first, dup := names[name]; dup {
			p.errorf(f.line, "group["+name+"]", "group %q is defined twice (first at line %d); give each group its own name", name, first)
			continue
		}
		names[name] = f.line
		p.checkName(f.line, scope{}.sub("group"), structs.NameGroup, name)
		if tg := p.group(f, name, job.Type); tg != nil {
			job.TaskGroups = append(job.TaskGroups, tg)
		}
	}
	return job
}

// groupVolume is a group's volume request with the lines its checks
// point at.
type groupVolume struct {
	req   *structs.VolumeRequest
	scope scope
	line  int            // the volume block's
	lines map[string]int // each field's
}

// group decodes one group block.
func (p *parser) group(gf *field, name, jobType string) *structs.TaskGroup {
	s := scope{}.labelled("group", name)
	tg := &structs.TaskGroup{Name: name, Count: 1}
	seen := map[string]int{}
	vols := map[string]*groupVolume{}
	var tasks []*field
	guessedTask := false // a misspelt task block was reported
	countLine := 0
	var pl placement
	for _, f := range gf.val.fields {
		if f.val.kind == kindNull || p.placementField(&pl, f, s) {
			continue
		}
		switch f.name {
		case "count":
			if !p.once(seen, f, s) {
				continue
			}
			countLine = f.line
			if n, ok := p.integer(f, s); ok {
				if n < 0 {
					p.bad(f.line, s, "count", "must be 0 or more, not %d", n)
					continue
				}
				tg.Count = n
			}
		case "volume":
			alias, ok := p.label(f, s)
			if !ok {
				continue
			}
			if first, dup := vols[alias]; dup {
				p.badIn(f.line, s, "volume %q is defined twice (first at line %d); give each volume its own name", alias, first.line)
				continue
			}
			p.checkName(f.line, s.sub("volume"), structs.NameVolumeAlias, alias)
			vols[alias] = p.volumeRequest(f, alias, s)
		case "task":
			tasks = append(tasks, f)
		case "disconnect":
			if p.once(seen, f, s) {
				if b := p.block(f, s); b != nil {
					tg.Disconnect = p.disconnect(b, s.sub("disconnect"))
				}
			}
		case "reschedule":
			if p.once(seen, f, s) {
				if b := p.block(f, s); b != nil {
					tg.Reschedule = p.reschedule(b, s.sub("reschedule"), jobType)
				}
			}
		case "update":
			if p.once(seen, f, s) {
				if b := p.block(f, s); b != nil {
					tg.Update = p.update(b, s.sub("update"))
				}
			}
		case "migrate":
			if p.once(seen, f, s) {
				if b := p.block(f, s); b != nil {
					tg.Migrate = p.migrate(b, s.sub("migrate"))
				}
			}
		default:
			guessedTask = guessedTask || p.unknown(f, s, groupFields) == "task"
		}
	}
	tg.Constraints, tg.Affinities, tg.Spreads = pl.constraints, pl.affinities, pl.spreads
	if len(vols) > 0 {
		tg.Volumes = make(map[string]*structs.VolumeRequest, len(vols))
		for alias, v := range vols {
			tg.Volumes[alias] = v.req
		}
	}
	p.checkGroupVolumes(tg, vols, jobType, countLine)

	if len(tasks) == 0 && !guessedTask {
		p.badIn(gf.line, s, `has no task; add a task "name" { ... } block with driver = "exec" and a config block`)
	}
	names := map[string]int{}
	for _, f := range tasks {
		tname, ok := p.label(f, s)
		if !ok {
			continue
		}
		if first, dup := names[tname]; dup {
			p.badIn(f.line, s, "task %q is defined twice (first at line %d); give each task its own name", tname, first)
			continue
		}
		names[tname] = f.line
		p.checkName(f.line, s.sub("task"), structs.NameTask, tname)
		tg.Tasks = append(tg.Tasks, p.task(f, tname, s, jobType, vols))
	}
	return tg
}

// disconnect reads a group's disconnect block.
func (p *parser) disconnect(b *node, s scope) *structs.DisconnectStrategy {
	d := &structs.DisconnectStrategy{}
	seen := map[string]int{}
	for _, f := range b.fields {
		if f.val.kind == kindNull || !p.once(seen, f, s) {
			continue
		}
		switch f.name {
		case "stop_on_client":
			stop, _ := p.boolean(f, s)
			d.StopOnClient = &stop
		default:
			p.unknown(f, s, disconnectKeys)
		}
	}
	return d
}

// volumeRequest decodes a group's volume "alias" block.
func (p *parser) volumeRequest(vf *field, alias string, gs scope) *groupVolume {
	s := gs.labelled("volume", alias)
	v := &groupVolume{req: &structs.VolumeRequest{Name: alias}, scope: s, line: vf.line, lines: map[string]int{}}
	fs := &fields{seen: v.lines, guessed: map[string]bool{}}
	for _, f := range vf.val.fields {
		if f.val.kind == kindNull {
			continue
		}
		if !p.once(v.lines, f, s) {
			continue
		}
		switch f.name {
		case "type":
			if t, ok := p.str(f, s); ok {
				if t != "csi" {
					p.bad(f.line, s, "type", `%q is not supported; berth volumes are type = "csi"`, t)
				}
				v.req.Type = t
			}
		case "source":
			if src, ok := p.str(f, s); ok {
				if strings.TrimSpace(src) == "" {
					p.bad(f.line, s, "source", "is empty; name the volume's ID, as berth volume status lists it")
				} else {
					p.checkName(f.line, s.sub("source"), structs.NameVolumeID, src)
				}
				v.req.Source = src
			}
		case "access_mode":
			if m, ok := p.oneOf(f, s, accessModeNames()); ok {
				v.req.AccessMode = structs.CSIVolumeAccessMode(m)
			}
		case "attachment_mode":
			if m, ok := p.oneOf(f, s, attachmentModeNames); ok {
				v.req.AttachmentMode = structs.CSIVolumeAttachmentMode(m)
			}
		case "read_only":
			v.req.ReadOnly, _ = p.boolean(f, s)
		case "per_alloc":
			v.req.PerAlloc, _ = p.boolean(f, s)
		case "mount_options":
			if b := p.block(f, s); b != nil {
				v.req.MountOptions = p.mountOptions(b, s.sub("mount_options"))
			}
		default:
			fs.unknown(p, f, s, volumeReqField)
		}
	}
	required := []struct{ name, hint string }{
		{"type", `add type = "csi"`},
		{"source", `name the volume's ID, e.g. source = "data" (see berth volume status)`},
		{"access_mode", "one of " + quoteList(accessModeNames())},
		{"attachment_mode", "one of " + quoteList(attachmentModeNames)},
	}
	for _, r := range required {
		if !fs.has(r.name) {
			p.missing(vf.line, s, r.name, r.hint)
		}
	}
	return v
}
