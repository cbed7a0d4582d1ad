// Package spec reads the files people write for berth: volume specs (berth
// volume register / create), in HCL or JSON, into api.VolumeSpec; job
// specs (berth job run), in HCL or the API's JSON form of a job, into
// structs.Job; and config files, such as the agent's, into any struct
// tagged for gohcl (DecodeConfig).
//
// HCL is plain HCL, as hashicorp/hcl/v2 parses it: a block written on one
// line holds one argument at most, and a file HCL refuses is refused with
// HCL's own words, at its line, with a hint where they do not say what to
// do (hcl.go's diags, for specs and configs alike).
//
// Specs: both syntaxes are first read into one small tree of values with
// their line numbers (tree.go, hcl.go, json.go); then a decoder walks the
// tree: volume.go and topology.go for volumes; job.go, job_task.go,
// job_docker.go (a docker task's config) and job_check.go for jobs, with
// job_pascal.go and pascal.go reshaping the API's JSON into the HCL tree.
// Every decoder reads fields with one set of helpers (decode.go), so that
// HCL and JSON accept values and report problems alike: every error names the file, the line and the field,
// suggests the field meant when a name is misspelt (and does not also
// report it missing), and lists the valid values when a value is not one
// of them. IDs and names are checked by the servers' rule,
// structs.ValidateName, so that a spec the servers would refuse is refused
// before it is sent.
//
// Configs (config.go) are decoded by gohcl.DecodeBody, over the defaults
// the struct holds; HCL's diagnostics become *Errors at their lines.
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
// Imports: api, structs (for the mode names and the name rule), hcl/v2
// (hclsyntax, json, gohcl), go-cty and github.com/agext/levenshtein (the
// edit distance of the suggestions) only. Parsing never contacts a server;
// it checks the spec's shape and values, not whether the plugin, the
// volume or the nodes exist.
//
// Concurrency: the functions are pure and safe to call concurrently.
package spec
