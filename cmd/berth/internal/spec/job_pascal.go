package spec

// A job in JSON is the API's form of structs.Job, as "berth job status
// -json" prints it ({"ID": "web", "TaskGroups": [...]}), or that wrapped
// as {"Job": {...}}, as Nomad's job run -json takes it. pascalJob
// reshapes it into the tree HCL gives (job "web" { group "g" { ... } }),
// so one decoder reads both and reports the same errors. Durations are
// nanoseconds there; the parser's pascal flag tells the decoder.

var (
	pascalJobNames     = map[string]string{"Type": "type", "Name": "name", "Namespace": "namespace"}
	pascalGroupNames   = map[string]string{"Count": "count"}
	pascalVolumeNames  = map[string]string{"Type": "type", "Source": "source", "ReadOnly": "read_only", "AccessMode": "access_mode", "AttachmentMode": "attachment_mode", "PerAlloc": "per_alloc", "MountOptions": "mount_options"}
	pascalTaskNames    = map[string]string{"Driver": "driver", "Config": "config", "Env": "env", "Restart": "restart", "KillTimeout": "kill_timeout", "KillSignal": "kill_signal", "CSIPluginConfig": "csi_plugin", "User": "user"}
	pascalDisconnect   = map[string]string{"StopOnClient": "stop_on_client"}
	pascalRestartNames = map[string]string{"Attempts": "attempts", "Interval": "interval", "Delay": "delay", "Mode": "mode"}
	pascalMountNames   = map[string]string{"Volume": "volume", "Destination": "destination", "ReadOnly": "read_only", "PropagationMode": "propagation_mode"}
	pascalPluginNames  = map[string]string{"ID": "id", "Type": "type", "MountDir": "mount_dir", "StagePublishBaseDir": "stage_publish_base_dir", "HealthTimeout": "health_timeout"}
	pascalResources    = map[string]string{"CPU": "cpu", "Cores": "cores", "MemoryMB": "memory", "MemoryMaxMB": "memory_max"}
	pascalConstraint   = map[string]string{"Attribute": "attribute", "Operator": "operator", "Value": "value", "Weight": "weight"}

	// pascalServerOwned are the job's fields the servers set; a job read
	// back from the API carries them, and registering it ignores them.
	pascalServerOwned = map[string]bool{"Stop": true, "CreateIndex": true, "ModifyIndex": true, "Status": true, "Version": true, "SubmitTime": true}
)

// pascalJob returns a root holding one job block, or nil with the
// problem reported.
func (p *parser) pascalJob(root *node) *node {
	if len(root.fields) == 1 && root.fields[0].name == "Job" && root.fields[0].val.kind == kindObject {
		root = root.fields[0].val
	}
	if !isPascal(root) {
		p.errorf(root.line, "", `the JSON must be the API's form of a job, {"ID": "web", "Type": "service", "TaskGroups": [...]} `+
			`as "berth job status -json" prints it; or write the spec in HCL`)
		return nil
	}
	p.pascal = true
	job := &node{kind: kindObject, line: root.line, block: true}
	for _, f := range present(root.fields) {
		switch {
		case f.name == "ID":
			if f.val.kind != kindString {
				p.errorf(f.line, "ID", "ID: must be a string, not %s", f.val.describe())
				return nil
			}
			job.labels = []string{f.val.str}
		case f.name == "TaskGroups":
			for _, item := range p.pascalList(f) {
				job.fields = append(job.fields, &field{name: "group", line: item.line, val: p.pascalGroup(item)})
			}
		case p.pascalPlacement(job, f):
		case pascalServerOwned[f.name]:
		default:
			job.fields = append(job.fields, renamed(f, pascalJobNames))
		}
	}
	if job.labels == nil {
		p.errorf(root.line, "ID", `ID: missing; every job needs one, e.g. "ID": "web"`)
		return nil
	}
	return &node{kind: kindObject, line: root.line, fields: []*field{{name: "job", line: root.line, val: job}}}
}

func (p *parser) pascalGroup(tg *node) *node {
	g := &node{kind: kindObject, line: tg.line, block: true}
	for _, f := range present(tg.fields) {
		switch f.name {
		case "Name":
			g.labels = labelOf(f)
		case "Volumes":
			if f.val.kind != kindObject {
				p.errorf(f.line, "Volumes", "Volumes: must be an object of volume requests by name, not %s", f.val.describe())
				continue
			}
			for _, vf := range present(f.val.fields) {
				v := pascalObject(vf.val, pascalVolumeNames, "Name")
				v.labels = []string{vf.name}
				for _, mf := range v.fields {
					if mf.name == "mount_options" {
						mf.val = pascalObject(mf.val, pascalMount)
					}
				}
				g.fields = append(g.fields, &field{name: "volume", line: vf.line, val: v})
			}
		case "Tasks":
			for _, item := range p.pascalList(f) {
				g.fields = append(g.fields, &field{name: "task", line: item.line, val: p.pascalTask(item)})
			}
		case "Disconnect":
			g.fields = append(g.fields, &field{name: "disconnect", line: f.line, val: pascalObject(f.val, pascalDisconnect)})
		case "Reschedule":
			g.fields = append(g.fields, &field{name: "reschedule", line: f.line, val: pascalObject(f.val, pascalReschedule)})
		case "Update":
			g.fields = append(g.fields, &field{name: "update", line: f.line, val: pascalObject(f.val, pascalUpdate)})
		case "Migrate":
			g.fields = append(g.fields, &field{name: "migrate", line: f.line, val: pascalObject(f.val, pascalMigrate)})
		case "Constraints", "Affinities", "Spreads":
			p.pascalPlacement(g, f)
		default:
			g.fields = append(g.fields, renamed(f, pascalGroupNames))
		}
	}
	return g
}

func (p *parser) pascalTask(tn *node) *node {
	t := &node{kind: kindObject, line: tn.line, block: true}
	for _, f := range present(tn.fields) {
		switch f.name {
		case "Name":
			t.labels = labelOf(f)
		case "VolumeMounts":
			for _, item := range p.pascalList(f) {
				t.fields = append(t.fields, &field{name: "volume_mount", line: item.line, val: pascalObject(item, pascalMountNames)})
			}
		case "Restart":
			t.fields = append(t.fields, &field{name: "restart", line: f.line, val: pascalObject(f.val, pascalRestartNames)})
		case "CSIPluginConfig":
			t.fields = append(t.fields, &field{name: "csi_plugin", line: f.line, val: pascalObject(f.val, pascalPluginNames)})
		case "Resources":
			t.fields = append(t.fields, &field{name: "resources", line: f.line, val: pascalObject(f.val, pascalResources)})
		default:
			t.fields = append(t.fields, renamed(f, pascalTaskNames))
		}
	}
	return t
}

// pascalPlacement reshapes a Constraints, Affinities or Spreads list
// into constraint, affinity or spread blocks of parent (a spread's
// Targets into its target "VALUE" blocks); false for another field.
func (p *parser) pascalPlacement(parent *node, f *field) bool {
	name := map[string]string{"Constraints": "constraint", "Affinities": "affinity", "Spreads": "spread"}[f.name]
	if name == "" {
		return false
	}
	for _, item := range p.pascalList(f) {
		b := &node{kind: kindObject, line: item.line, block: true}
		for _, cf := range present(item.fields) {
			if cf.name != "Targets" {
				b.fields = append(b.fields, renamed(cf, pascalConstraint))
				continue
			}
			for _, t := range p.pascalList(cf) {
				target := &node{kind: kindObject, line: t.line, block: true}
				for _, tf := range present(t.fields) {
					switch tf.name {
					case "Value":
						target.labels = labelOf(tf)
					case "Percent":
						target.fields = append(target.fields, &field{name: "percent", line: tf.line, val: tf.val})
					default:
						target.fields = append(target.fields, tf)
					}
				}
				b.fields = append(b.fields, &field{name: "target", line: t.line, val: target})
			}
		}
		parent.fields = append(parent.fields, &field{name: name, line: item.line, val: b})
	}
	return true
}

// pascalList returns the objects of a list field; anything else is
// reported and skipped.
func (p *parser) pascalList(f *field) []*node {
	if f.val.kind != kindList {
		p.errorf(f.line, f.name, "%s: must be a list of objects, not %s", f.name, f.val.describe())
		return nil
	}
	var out []*node
	for i, item := range f.val.items {
		if item.kind != kindObject {
			p.errorf(item.line, f.name, "%s[%d]: must be an object, not %s", f.name, i, item.describe())
			continue
		}
		out = append(out, item)
	}
	return out
}

// pascalObject renames an object's fields, dropping absent ones and those
// named in drop (a volume request's Name repeats its key). A value that is
// not an object is left for the decoder to report.
func pascalObject(n *node, names map[string]string, drop ...string) *node {
	if n.kind != kindObject {
		return n
	}
	out := &node{kind: kindObject, line: n.line, block: true}
next:
	for _, f := range present(n.fields) {
		for _, d := range drop {
			if f.name == d {
				continue next
			}
		}
		out.fields = append(out.fields, renamed(f, names))
	}
	return out
}

// present drops fields the API's JSON leaves empty: null and "" (an
// unset string).
func present(fields []*field) []*field {
	out := make([]*field, 0, len(fields))
	for _, f := range fields {
		switch {
		case f.val.kind == kindNull,
			f.val.kind == kindString && f.val.str == "":
			continue
		}
		out = append(out, f)
	}
	return out
}

// renamed is f under its spec name when names has one; an unknown name
// stays, for the decoder to report with a suggestion.
func renamed(f *field, names map[string]string) *field {
	if to, ok := names[f.name]; ok {
		return &field{name: to, line: f.line, val: f.val}
	}
	return f
}

// labelOf makes a Name field a block's label.
func labelOf(f *field) []string {
	if f.val.kind != kindString {
		return nil
	}
	return []string{f.val.str}
}
