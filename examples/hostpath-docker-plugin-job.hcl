# berth-hostpath shipped as an image, run by the docker driver on every
# client: a system job (README "Plugins as containers"). Build the image
# first from the static bin/berth-hostpath (make build) with a two-line
# Dockerfile:
#
#   FROM scratch
#   COPY berth-hostpath /
#
# The plugin mounts, so it needs the sys_admin capability; clients allow
# it with driver "docker" { allow_caps = ["sys_admin"] }. Most vendors'
# plugins ask for privileged = true instead, which clients allow with
# driver "docker" { allow_privileged = true }. Its volumes live in its task
# dir (/berth/local in the container), so they last as long as the plugin
# allocation does.
#
#   berth job run examples/hostpath-docker-plugin-job.hcl
#   berth plugin status hostpath-docker
#
job "hostpath-docker" {
  type = "system"

  group "plugin" {
    task "plugin" {
      driver = "docker"

      config {
        image   = "berth-example/hostpath:1"
        command = "/berth-hostpath"
        args = [
          "-root", "/berth/local/volumes",
          "-node-id", "${BERTH_NODE_NAME}",
          "-topology", "zone=${BERTH_NODE_NAME}",
        ]
        cap_add = ["sys_admin"]
      }

      csi_plugin {
        id             = "hostpath-docker"
        type           = "monolith"
        mount_dir      = "/csi"
        health_timeout = "30s"
      }
    }
  }
}
