# One agent that is both a server and a client: a single-machine cluster
# with its own data dir and settings (docs/operations.md). The client
# lists no servers: it joins this agent's own.
name     = "solo"
data_dir = "/var/lib/berth"
server {
  enabled          = true
  bootstrap_expect = 1
}
client {
  enabled = true
}
