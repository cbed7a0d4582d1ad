package structs

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Restart policy bounds. A task restarts at most Attempts times per
// Interval and waits Delay before each restart; with Delay at least a
// second and Attempts*Delay within Interval, a crashing task restarts at
// most once a second, never hundreds of times in a few seconds.
const (
	MinRestartInterval = 5 * time.Second
	MinRestartDelay    = time.Second
)

// maxProblems is how many problems one validation error lists; the rest
// are counted, so that a huge request makes a short error.
const maxProblems = 20

// problems collects what is wrong with a request.
type problems struct {
	list []string
	more int
}

func (p *problems) add(format string, args ...any) {
	if len(p.list) >= maxProblems {
		p.more++
		return
	}
	p.list = append(p.list, fmt.Sprintf(format, args...))
}

func (p *problems) addErr(prefix string, err error) {
	if err != nil {
		p.add("%s%v", prefix, err)
	}
}

// ValidateMountDestination checks where a volume is mounted in a task: a
// clean path, absolute or relative to the task dir, that does not climb
// out of it ("../etc" is refused, as is "/data/../etc": write "/etc").
func ValidateMountDestination(dest string) error {
	switch {
	case dest == "":
		return NewError(CodeBadRequest, "missing destination")
	case len(dest) > 4096 || strings.ContainsRune(dest, 0):
		return NewError(CodeBadRequest, "destination %s is not a path", QuoteName(dest))
	case filepath.Clean(dest) != dest && filepath.Clean(dest)+"/" != dest:
		return NewError(CodeBadRequest, "destination %s is not a clean path; write %s", QuoteName(dest), QuoteName(filepath.Clean(dest)))
	case !filepath.IsAbs(dest) && !filepath.IsLocal(dest):
		return NewError(CodeBadRequest, "destination %s climbs out of the task dir; give a path inside it, or an absolute path", QuoteName(dest))
	}
	return nil
}

// MaxJobDuration bounds every duration a job sets (kill_timeout, restart
// and reschedule intervals and delays, update times, a plugin's
// health_timeout): a week. Beyond it a value is a mistake (2^63-1 ns is
// 292 years), and sums of such values would overflow.
const MaxJobDuration = 7 * 24 * time.Hour

// maxDurations adds a problem for each named duration over MaxJobDuration.
func (p *problems) maxDurations(at string, named ...any) {
	for i := 0; i+1 < len(named); i += 2 {
		if d := named[i+1].(time.Duration); d > MaxJobDuration {
			p.add("%s%s %s is longer than the most berth takes, %s", at, named[i], d, MaxJobDuration)
		}
	}
}

func (p *problems) String() string {
	s := strings.Join(p.list, "; ")
	if p.more > 0 {
		s += fmt.Sprintf("; and %d more", p.more)
	}
	return s
}

// Validate checks what the servers need of a job: no null entries, IDs
// and names (ValidateName), types, drivers, restart policies and that
// every volume_mount names a group volume. The jobspec parser checks the
// same and more, with file and line; this is the servers' guard for jobs
// that arrive as JSON, and it runs before anything reads the job's
// groups and tasks.
func (j *Job) Validate() error {
	var p problems
	p.addErr("", ValidateName(NameJobID, j.ID))
	if j.Namespace != "" {
		p.addErr("", ValidateName(NameNamespace, j.Namespace))
	}
	switch j.Type {
	case JobTypeService, JobTypeBatch, JobTypeSystem:
	default:
		p.add("type %s must be %q, %q or %q", QuoteName(j.Type), JobTypeService, JobTypeBatch, JobTypeSystem)
	}
	if len(j.TaskGroups) == 0 {
		p.add("needs at least one group")
	}
	validatePlacement(&p, "", j.Constraints, j.Affinities, j.Spreads)
	seen := map[string]bool{}
	for i, tg := range j.TaskGroups {
		if tg == nil {
			p.add("group %d is null", i)
			continue
		}
		if seen[tg.Name] {
			p.add("group %s is given twice", QuoteName(tg.Name))
		}
		seen[tg.Name] = true
		tg.validate(&p, j.Type)
	}
	if len(p.list) > 0 {
		return NewError(CodeBadRequest, "job %s: %s", QuoteName(j.ID), p.String())
	}
	return nil
}

// ForRegister is the job as the servers take it in: a copy (that keeps
// null entries, so that Validate names them), in namespace, valid, and
// asking for at most maxCount allocations. namespace is the request's,
// the one its token is checked in: a job that names none takes it, and a
// job that names another is refused, or a token of one namespace could
// register jobs in any.
func (j *Job) ForRegister(namespace string, maxCount int) (*Job, error) {
	job := j.Copy()
	if job.Namespace == "" {
		job.Namespace = namespace
	}
	if err := job.Validate(); err != nil {
		return nil, err
	}
	if job.Namespace != namespace {
		return nil, NewError(CodeBadRequest, "job %s is in namespace %q but the request is for namespace %q; "+
			"send it with ?namespace=%s, or leave the job's namespace out",
			QuoteName(job.ID), job.Namespace, namespace, job.Namespace)
	}
	if err := job.ValidateCount(maxCount); err != nil {
		return nil, err
	}
	return job, nil
}

// ValidateCount refuses a job that asks for more than max allocations,
// counting every group's count. The servers' job_max_count is max.
func (j *Job) ValidateCount(max int) error {
	total := 0
	for _, tg := range j.TaskGroups {
		if tg == nil {
			continue
		}
		if tg.Count > max {
			return NewError(CodeBadRequest, "job %s: group %s: count %d is over this cluster's limit of %d allocations per job; "+
				"lower count, or raise the servers' job_max_count", QuoteName(j.ID), QuoteName(tg.Name), tg.Count, max)
		}
		total += tg.Count
		if total > max {
			return NewError(CodeBadRequest, "job %s: the groups' counts add up to more than this cluster's limit of %d allocations per job; "+
				"lower count, or raise the servers' job_max_count", QuoteName(j.ID), max)
		}
	}
	return nil
}

func (tg *TaskGroup) validate(p *problems, jobType string) {
	at := fmt.Sprintf("group %s: ", QuoteName(tg.Name))
	p.addErr(at, ValidateName(NameGroup, tg.Name))
	if tg.Count < 0 {
		p.add("%scount %d must not be negative", at, tg.Count)
	}
	for alias, v := range tg.Volumes {
		vat := at + fmt.Sprintf("volume %s: ", QuoteName(alias))
		if v == nil {
			p.add("%svolume %s is null", at, QuoteName(alias))
			continue
		}
		p.addErr(at, ValidateName(NameVolumeAlias, alias))
		if v.Type != "csi" {
			p.add("%stype must be \"csi\"", vat)
			continue
		}
		if v.Source == "" {
			p.add("%smissing source (the volume's ID)", vat)
		} else {
			p.addErr(vat+"source: ", ValidateName(NameVolumeID, v.Source))
		}
		if _, err := ClaimModeFor(v.AccessMode, v.ReadOnly); err != nil {
			// Named by source too: the volume, not only the group's alias.
			p.add("%svolume %s (source %s): %v", at, QuoteName(alias), QuoteName(v.Source), err)
			continue
		}
		for _, pr := range v.UseProblems(tg.Count, jobType, "") {
			p.add("%s%s %s", vat, pr.Field, pr.Message)
		}
	}
	if len(tg.Tasks) == 0 {
		p.add("%sneeds at least one task", at)
	}
	validatePlacement(p, at, tg.Constraints, tg.Affinities, tg.Spreads)
	tg.validateUpdate(p, at)
	tg.validateReschedule(p, at)
	tg.validateMigrate(p, at)
	names := map[string]bool{}
	for i, t := range tg.Tasks {
		if t == nil {
			p.add("%stask %d is null", at, i)
			continue
		}
		if names[t.Name] {
			p.add("%stask %s is given twice", at, QuoteName(t.Name))
		}
		names[t.Name] = true
		t.validate(p, tg, at+fmt.Sprintf("task %s: ", QuoteName(t.Name)))
	}
}

func (t *Task) validate(p *problems, tg *TaskGroup, at string) {
	p.addErr(at, ValidateName(NameTask, t.Name))
	switch t.Driver {
	case DriverExec:
		validateExecConfig(p, t.Config, at+"config: ")
	case DriverDocker:
		validateDockerConfig(p, t.Config, at+"config: ")
	default:
		p.add("%sdriver %s is not supported; use %s%s", at, QuoteName(t.Driver), orList(TaskDrivers), didYouMean(t.Driver, TaskDrivers))
	}
	if t.KillTimeout < 0 {
		p.add("%skill_timeout %s must not be negative (0 is the default, 5s)", at, t.KillTimeout)
	}
	p.maxDurations(at, "kill_timeout", t.KillTimeout)
	t.Resources.validate(p, at)
	if t.KillSignal != "" && !slices.Contains(KillSignals, t.KillSignal) {
		p.add("%skill_signal %s is not one berth sends; use %s%s", at, QuoteName(t.KillSignal), orList(KillSignals),
			didYouMean(t.KillSignal, KillSignals))
	}
	if t.User != "" {
		p.addErr(at, ValidateTaskUser(t.User))
	}
	if t.Restart != nil {
		t.Restart.validate(p, at+"restart: ")
	}
	for i, vm := range t.VolumeMounts {
		if vm == nil {
			p.add("%svolume_mount %d is null", at, i)
			continue
		}
		req, ok := tg.Volumes[vm.Volume]
		if !ok || req == nil {
			p.add("%svolume_mount: volume %s is not a volume of the group", at, QuoteName(vm.Volume))
			continue
		}
		switch vm.PropagationMode {
		case "", PropagationPrivate, PropagationHostToTask:
		case PropagationBidirectional:
			if req.ReadOnly || vm.ReadOnly {
				p.add("%svolume_mount %s: propagation_mode bidirectional needs a read-write volume", at, QuoteName(vm.Volume))
			}
		default:
			p.add("%svolume_mount %s: propagation_mode %s must be private, host-to-task or bidirectional",
				at, QuoteName(vm.Volume), QuoteName(vm.PropagationMode))
		}
		p.addErr(fmt.Sprintf("%svolume_mount %s: ", at, QuoteName(vm.Volume)), ValidateMountDestination(vm.Destination))
	}
	if c := t.CSIPluginConfig; c != nil {
		switch c.Type {
		case CSIPluginTypeController, CSIPluginTypeNode, CSIPluginTypeMonolith:
		default:
			p.add("%scsi_plugin: type %s must be controller, node or monolith", at, QuoteName(string(c.Type)))
		}
		// It names the plugin's dir on each client.
		p.addErr(at+"csi_plugin: ", ValidateName(NamePluginID, c.ID))
		if c.MountDir == "" || !filepath.IsAbs(c.MountDir) {
			p.add("%scsi_plugin: mount_dir %s must be an absolute path", at, QuoteName(c.MountDir))
		}
		if d := c.StagePublishBaseDir; d != "" && (!filepath.IsAbs(d) || filepath.Clean(d) == "/") {
			p.add("%scsi_plugin: stage_publish_base_dir %s must be an absolute path other than /", at, QuoteName(d))
		} else if d != "" && nested(filepath.Clean(d), filepath.Clean(c.MountDir)) {
			// The plugin's dir is bound at both: one inside the other would
			// bind a shared mount inside itself.
			p.add("%scsi_plugin: stage_publish_base_dir %s and mount_dir %s are inside one another; make them the same dir or apart",
				at, QuoteName(d), QuoteName(c.MountDir))
		}
		p.maxDurations(at+"csi_plugin: ", "health_timeout", time.Duration(c.HealthTimeout))
		if c.HealthTimeout < 0 {
			p.add("%scsi_plugin: health_timeout %s must not be negative", at, time.Duration(c.HealthTimeout))
		}
	}
}

// The exec driver's config keys.
const (
	ExecConfigCommand = "command"
	ExecConfigArgs    = "args"
)

// ExecCommand reads an exec task's config as the client runs it: command
// (a string) and args (strings; msgpack and JSON decode them as []any).
// Its error says what is wrong ("missing command", "args[1] must be a
// string").
func ExecCommand(cfg map[string]any) (string, []string, error) {
	cmd, _ := cfg[ExecConfigCommand].(string)
	if cmd == "" {
		return "", nil, errors.New("missing command")
	}
	var args []string
	switch a := cfg[ExecConfigArgs].(type) {
	case nil:
	case []string:
		args = append(args, a...)
	case []any:
		for i, v := range a {
			s, ok := v.(string)
			if !ok {
				return "", nil, fmt.Errorf("args[%d] must be a string", i)
			}
			args = append(args, s)
		}
	default:
		return "", nil, errors.New("args must be a list of strings")
	}
	return cmd, args, nil
}

// validateExecConfig checks the exec driver's config as the client reads
// it (ExecCommand), and that it holds nothing else.
func validateExecConfig(p *problems, cfg map[string]any, at string) {
	if _, _, err := ExecCommand(cfg); err != nil {
		p.add("%s%v", at, err)
	}
	for k := range cfg {
		if k != ExecConfigCommand && k != ExecConfigArgs {
			hint := ""
			if contains(DockerConfigKeys, k) {
				hint = fmt.Sprintf(" (%s is the docker driver's: set driver = %q)", k, DriverDocker)
			}
			p.add("%sunknown key %s; exec takes command and args%s", at, QuoteName(k), hint)
		}
	}
}

// validate checks the bounds of a restart policy (see MinRestartDelay).
func (r *RestartPolicy) validate(p *problems, at string) {
	switch r.Mode {
	case "", RestartModeFail, RestartModeDelay:
	default:
		p.add("%smode %s must be %q or %q", at, QuoteName(r.Mode), RestartModeFail, RestartModeDelay)
	}
	switch {
	case r.Attempts < 0:
		p.add("%sattempts %d must be 0 or more", at, r.Attempts)
	case r.Interval < MinRestartInterval:
		p.add("%sinterval %s is too short; it must be at least %s", at, r.Interval, MinRestartInterval)
	case r.Attempts == 0 && r.Delay < 0:
		p.add("%sdelay %s must not be negative", at, r.Delay)
	case r.Attempts > 0 && r.Delay < MinRestartDelay:
		p.add("%sdelay %s is too short; it must be at least %s, so that a failing task restarts at most once a second", at, r.Delay, MinRestartDelay)
	case r.Attempts > 0 && int64(r.Attempts) > int64(r.Interval/r.Delay):
		p.add("%s%d attempts with a delay of %s do not fit in an interval of %s; lower attempts or delay, or raise interval",
			at, r.Attempts, r.Delay, r.Interval)
	}
	p.maxDurations(at, "interval", r.Interval, "delay", r.Delay)
	if r.Attempts == 0 && r.Mode == RestartModeDelay {
		p.add(`%smode "delay" with 0 attempts never restarts the task and never fails it; set attempts, or mode = "fail"`, at)
	}
}

// nested reports whether one of two clean absolute paths is strictly
// inside the other.
func nested(a, b string) bool {
	if a == b {
		return false
	}
	under := func(x, y string) bool { return strings.HasPrefix(x, strings.TrimSuffix(y, "/")+"/") }
	return under(a, b) || under(b, a)
}
