// Package spec parses the files people write to describe berth objects:
// volume specs (berth volume register / create), in HCL or JSON, into
// api.VolumeSpec, and job specs (berth job run), in HCL or the API's JSON
// form of a job, into structs.Job.
//
// Both syntaxes are first read into one small tree of values with their
// line numbers (tree.go), then one decoder walks the tree (volume.go for
// volumes; job.go, job_task.go and job_check.go for jobs, with
// job_pascal.go reshaping the API's JSON into the HCL tree), so HCL and
// JSON accept the same fields and report the same errors. Every error
// names the file, the line and the field, suggests the field meant when a
// name is misspelt, and lists the valid values when a value is not one of
// them.
//
// ParseVolume checks what every spec needs; ParseVolumeFor also checks
// what its purpose needs (register requires external_id, create refuses
// it), reporting those problems with the others. ParseJob applies the
// job's defaults (count 1, Nomad's restart policy for the job's type,
// kill_timeout 5s, propagation_mode "private", a plugin's mount_dir "/csi"
// and health_timeout 30s) and checks what a spec alone can show: a
// volume_mount names one of its group's volumes, bidirectional
// propagation only on read-write mounts, the access modes against the
// group's count (Nomad's per_alloc rules).
//
// Imports: api, structs (for the mode names), hcl/v2 and go-cty only.
// Parsing never contacts a server; it checks the spec's shape and values,
// not whether the plugin, the volume or the nodes exist.
//
// Concurrency: the functions are pure and safe to call concurrently.
package spec
