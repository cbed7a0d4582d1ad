# A volume for examples/hostpath-job.hcl, made by the berth-hostpath plugin
# that "make dev" runs:
#
#   berth volume create examples/hostpath-volume.hcl
#
id        = "data"
name      = "data"
type      = "csi"
plugin_id = "hostpath"

capacity_min = "64MiB"
capacity_max = "1GiB"

capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
