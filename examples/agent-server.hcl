# A server agent, the first of README's three on one machine. The others
# take their own name, data_dir and ports, and join this one with
# join = ["127.0.0.1:4748"] in their server block. Each setting here
# also has a flag (docs/operations.md), and flags win over the file; some
# settings are in the file only (job_max_count, the client's datacenter and
# controller_concurrency, plugin blocks):
#
#   berth agent -config examples/agent-server.hcl
#
name      = "s1"
data_dir  = "/tmp/berth/s1"
bind_addr = "127.0.0.1"
log_level = "info"

ports {
  http = 4746
  rpc  = 4747
  serf = 4748
}

server {
  enabled          = true
  bootstrap_expect = 3
}
