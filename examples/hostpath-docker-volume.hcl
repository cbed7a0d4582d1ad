# A volume for examples/docker-writer-job.hcl, made by the containerized
# berth-hostpath of examples/hostpath-docker-plugin-job.hcl:
#
#   berth volume create examples/hostpath-docker-volume.hcl
#
id        = "docker-data"
name      = "docker-data"
type      = "csi"
plugin_id = "hostpath-docker"

capacity_min = "64MiB"
capacity_max = "1GiB"

capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
