# A client agent of README's three servers, with a CSI plugin run outside
# berth, which it fingerprints and reports:
#
#   berth-hostpath -endpoint unix:///tmp/berth/hostpath.sock -root /tmp/berth/volumes &
#   berth agent -config examples/agent-client.hcl
#
name     = "c1"
data_dir = "/tmp/berth/c1"

ports {
  http = 7746
}

client {
  enabled = true
  servers = ["127.0.0.1:4747", "127.0.0.1:5747", "127.0.0.1:6747"]
}

plugin "hostpath" {
  type   = "monolith"    # controller | node | monolith
  socket = "/tmp/berth/hostpath.sock"
}
