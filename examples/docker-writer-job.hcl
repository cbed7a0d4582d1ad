# A containerized service that appends the time to a file on the CSI volume
# "docker-data" and prints the file, then sleeps until stopped. Its image is a static
# busybox FROM scratch (README "Plugins as containers"):
#
#   berth job run examples/docker-writer-job.hcl
#   berth alloc logs <alloc> writer
#
job "docker-writer" {
  type = "service"

  group "writer" {
    volume "data" {
      type            = "csi"
      source          = "docker-data"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }

    task "writer" {
      driver = "docker"

      config {
        image   = "berth-example/busybox:1"
        command = "/bin/busybox"
        # PID 1 of a container ignores SIGTERM unless it traps it.
        args = ["sh", "-c", "trap 'exit 0' TERM; date -u +%FT%TZ >> /data/out.txt; cat /data/out.txt; sleep 3600 & wait"]
      }

      volume_mount {
        volume      = "data"
        destination = "/data"
      }
    }
  }
}
