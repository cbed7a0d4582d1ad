package csitest

import "fmt"

// HostpathPluginJob is a system job that runs berth-hostpath (command) on
// every client as the monolith plugin id: each instance with its own root
// under root and in its own zone, both named after the client.
func HostpathPluginJob(command, root, id string) string {
	return fmt.Sprintf(`
job "hostpath-plugin" {
  type = "system"
  group "plugin" {
    task "plugin" {
      driver = "exec"
      config {
        command = %q
        args    = ["-root", "%s/${BERTH_NODE_NAME}", "-node-id", "${BERTH_NODE_NAME}", "-topology", "zone=${BERTH_NODE_NAME}"]
      }
      csi_plugin {
        id             = %q
        type           = "monolith"
        mount_dir      = "/csi"
        health_timeout = "30s"
      }
    }
  }
}
`, command, root, id)
}
