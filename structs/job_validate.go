package structs

import (
	"fmt"
	"path/filepath"
	"strings"
	"unicode"
)

// Validate checks what the servers need of a job: IDs, types, drivers and
// that every volume_mount names a group volume. The jobspec parser checks
// the same and more, with file and line; this is the servers' guard for
// jobs that arrive as JSON.
func (j *Job) Validate() error {
	var errs []string
	if j.ID == "" {
		errs = append(errs, "missing id")
	} else if strings.ContainsAny(j.ID, "/ \t\n[]") {
		errs = append(errs, fmt.Sprintf("id %q must not contain '/', '[', ']' or spaces", j.ID))
	}
	switch j.Type {
	case JobTypeService, JobTypeBatch, JobTypeSystem:
	default:
		errs = append(errs, fmt.Sprintf("type %q must be %q, %q or %q", j.Type, JobTypeService, JobTypeBatch, JobTypeSystem))
	}
	if len(j.TaskGroups) == 0 {
		errs = append(errs, "needs at least one group")
	}
	seen := map[string]bool{}
	for _, tg := range j.TaskGroups {
		if tg == nil {
			errs = append(errs, "a group is empty")
			continue
		}
		if seen[tg.Name] {
			errs = append(errs, fmt.Sprintf("group %q is given twice", tg.Name))
		}
		seen[tg.Name] = true
		errs = append(errs, tg.validate()...)
	}
	if len(errs) > 0 {
		return NewError(CodeBadRequest, "job %q: %s", j.ID, strings.Join(errs, "; "))
	}
	return nil
}

func (tg *TaskGroup) validate() []string {
	var errs []string
	at := fmt.Sprintf("group %q: ", tg.Name)
	if tg.Name == "" {
		errs = append(errs, "a group has no name")
	}
	if tg.Count < 0 {
		errs = append(errs, at+fmt.Sprintf("count %d must not be negative", tg.Count))
	}
	for alias, v := range tg.Volumes {
		if v == nil || v.Type != "csi" {
			errs = append(errs, at+fmt.Sprintf("volume %q: type must be \"csi\"", alias))
			continue
		}
		if v.Source == "" {
			errs = append(errs, at+fmt.Sprintf("volume %q: missing source (the volume's ID)", alias))
		}
		if _, err := ClaimModeFor(v.AccessMode, v.ReadOnly); err != nil {
			errs = append(errs, at+fmt.Sprintf("volume %q (source %q): %v", alias, v.Source, err))
		}
	}
	if len(tg.Tasks) == 0 {
		errs = append(errs, at+"needs at least one task")
	}
	for _, t := range tg.Tasks {
		tat := at + fmt.Sprintf("task %q: ", t.Name)
		if t.Driver != "exec" {
			errs = append(errs, tat+fmt.Sprintf("driver %q is not supported; use \"exec\"", t.Driver))
		}
		if cmd, _ := t.Config["command"].(string); cmd == "" {
			errs = append(errs, tat+"config: missing command")
		}
		for _, vm := range t.VolumeMounts {
			req, ok := tg.Volumes[vm.Volume]
			if !ok {
				errs = append(errs, tat+fmt.Sprintf("volume_mount: volume %q is not a volume of the group", vm.Volume))
				continue
			}
			switch vm.PropagationMode {
			case "", PropagationPrivate, PropagationHostToTask:
			case PropagationBidirectional:
				if req.ReadOnly || vm.ReadOnly {
					errs = append(errs, tat+fmt.Sprintf("volume_mount %q: propagation_mode bidirectional needs a read-write volume", vm.Volume))
				}
			default:
				errs = append(errs, tat+fmt.Sprintf("volume_mount %q: propagation_mode %q must be private, host-to-task or bidirectional",
					vm.Volume, vm.PropagationMode))
			}
			if vm.Destination == "" {
				errs = append(errs, tat+fmt.Sprintf("volume_mount %q: missing destination", vm.Volume))
			}
		}
		if p := t.CSIPluginConfig; p != nil {
			switch p.Type {
			case CSIPluginTypeController, CSIPluginTypeNode, CSIPluginTypeMonolith:
			default:
				errs = append(errs, tat+fmt.Sprintf("csi_plugin: type %q must be controller, node or monolith", p.Type))
			}
			switch {
			case p.ID == "":
				errs = append(errs, tat+"csi_plugin: missing id")
			case strings.HasPrefix(p.ID, ".") || strings.ContainsFunc(p.ID, func(r rune) bool { return r == '/' || unicode.IsSpace(r) || unicode.IsControl(r) }):
				// It names the plugin's dir on each client.
				errs = append(errs, tat+fmt.Sprintf("csi_plugin: id %q must be a plain name: no '/', spaces or leading '.'", p.ID))
			}
			if p.MountDir == "" || !filepath.IsAbs(p.MountDir) {
				errs = append(errs, tat+fmt.Sprintf("csi_plugin: mount_dir %q must be an absolute path", p.MountDir))
			}
		}
	}
	return errs
}
