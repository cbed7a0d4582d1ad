package structs

import (
	"math/rand/v2"
	"time"
)

// A client heartbeats every TTL/HeartbeatMinDivisor to
// TTL/HeartbeatMaxDivisor of the TTL it was last handed, uniformly, so
// that two tries fit well within half the TTL, where its fence acts. On
// average that is HeartbeatsPerTTL heartbeats a TTL (4.8): the servers
// stretch the TTL with the fleet by that rate, so that the fleet's
// heartbeats stay under server { max_heartbeats_per_second }.
const (
	HeartbeatMinDivisor = 6
	HeartbeatMaxDivisor = 4
	HeartbeatsPerTTL    = 2.0 / (1.0/HeartbeatMinDivisor + 1.0/HeartbeatMaxDivisor)
)

// HeartbeatInterval is how long a client waits before its next heartbeat
// under ttl: a random point between TTL/HeartbeatMinDivisor and
// TTL/HeartbeatMaxDivisor; a second when it knows no TTL.
func HeartbeatInterval(ttl time.Duration) time.Duration {
	if ttl <= 0 {
		return time.Second
	}
	lo, hi := ttl/HeartbeatMinDivisor, ttl/HeartbeatMaxDivisor
	return lo + rand.N(hi-lo+1)
}
