# A service that appends the date to a file on the CSI volume "data"
# (create it first with examples/hostpath-volume.hcl), then sleeps:
#
#   berth job run examples/hostpath-job.hcl
#   berth alloc logs <alloc> writer
#
job "writer" {
  type = "service"

  group "writer" {
    count = 1

    volume "data" {
      type            = "csi"
      source          = "data"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }

    task "writer" {
      driver = "exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "date >> /data/out.txt; sleep 3600"]
      }

      volume_mount {
        volume      = "data"
        destination = "/data"
      }
    }
  }
}
