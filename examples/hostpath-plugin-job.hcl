# berth-hostpath as a plugin task on every client: a system job.
# Each node keeps its volumes under its own root and reports its own
# topology (zone = the node's name), so a volume created there is placed
# only there. The plugin task runs as root (it mounts), so only on clients
# with client { allow_root_tasks = true }. Build the plugin first (make
# build puts it in bin/), then, on a cluster whose clients declare no
# hostpath plugin of their own:
#
#   berth job run examples/hostpath-plugin-job.hcl
#   berth plugin status hostpath
#
job "hostpath-plugin" {
  type = "system"

  group "plugin" {
    task "plugin" {
      driver = "exec"

      config {
        command = "/usr/local/bin/berth-hostpath"
        args = [
          "-root", "/var/lib/berth-hostpath/${BERTH_NODE_NAME}",
          "-node-id", "${BERTH_NODE_NAME}",
          "-topology", "zone=${BERTH_NODE_NAME}",
        ]
      }

      csi_plugin {
        id             = "hostpath"
        type           = "monolith"
        mount_dir      = "/csi"
        health_timeout = "30s"
      }
    }
  }
}
