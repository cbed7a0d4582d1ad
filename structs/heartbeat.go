package structs

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
