# A service that appends the time to a file on the CSI volume "data" and
# prints it (create the volume first with examples/hostpath-volume.hcl),
# then sleeps:
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
        args    = ["-c", "date -u +%FT%TZ | tee -a /data/out.txt; sleep 3600"]
      }

      volume_mount {
        volume      = "data"
        destination = "/data"
      }
    }
  }
}
