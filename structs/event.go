package structs

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// EventTopic names the kind of object an event is about. The names are
// part of the HTTP API (?topic=): append only, never rename.
type EventTopic string

const (
	TopicNode       EventTopic = "Node"
	TopicJob        EventTopic = "Job"
	TopicAllocation EventTopic = "Allocation"
	TopicCSIVolume  EventTopic = "CSIVolume"
	TopicCSIPlugin  EventTopic = "CSIPlugin"
	// TopicAll, as a topic of a request, asks for every topic.
	TopicAll EventTopic = "*"
)

// EventTopics lists every topic, in the order the docs give them.
var EventTopics = []EventTopic{TopicNode, TopicJob, TopicAllocation, TopicCSIVolume, TopicCSIPlugin}

// Event types, by topic. They are part of the HTTP API: append only, never
// rename.
const (
	EventNodeRegistered         = "NodeRegistered"
	EventNodeUpdated            = "NodeUpdated" // fingerprint, plugins, events
	EventNodeStatusUpdated      = "NodeStatusUpdated"
	EventNodeDrainUpdated       = "NodeDrainUpdated"
	EventNodeEligibilityUpdated = "NodeEligibilityUpdated"
	EventNodeDeregistered       = "NodeDeregistered"

	EventJobRegistered   = "JobRegistered" // a new job or a new version
	EventJobStopped      = "JobStopped"
	EventJobDeregistered = "JobDeregistered" // purged or garbage collected

	EventAllocationCreated = "AllocationCreated"
	EventAllocationUpdated = "AllocationUpdated"
	EventAllocationDeleted = "AllocationDeleted" // garbage collected

	EventVolumeRegistered   = "VolumeRegistered"
	EventVolumeUpdated      = "VolumeUpdated"
	EventVolumeDeregistered = "VolumeDeregistered"
	// One event per change of a claim's state, so that a claim's whole
	// life shows: taken -> unpublishing -> node-detached ->
	// controller-detached -> freed. ClaimReleaseRetry is a release step
	// that failed and will be tried again (Attempts, LastError,
	// NextAttemptAt), the claim's state unchanged.
	EventClaimTaken              = "ClaimTaken"
	EventClaimUnpublishing       = "ClaimUnpublishing"
	EventClaimNodeDetached       = "ClaimNodeDetached"
	EventClaimControllerDetached = "ClaimControllerDetached"
	EventClaimFreed              = "ClaimFreed"
	EventClaimReleaseRetry       = "ClaimReleaseRetry"
	// The volume's condition, as the node plugin of one claim reports it
	// (CSIVolumeClaim.Usage), turned abnormal, or back to normal; the
	// payload is that claim.
	EventVolumeConditionAbnormal = "VolumeConditionAbnormal"
	EventVolumeConditionNormal   = "VolumeConditionNormal"

	EventPluginUpdated = "PluginUpdated"
	EventPluginDeleted = "PluginDeleted"
)

// claimEventTypes is the event type of each claim state, by its number.
var claimEventTypes = []string{EventClaimTaken, EventClaimUnpublishing, EventClaimNodeDetached,
	EventClaimControllerDetached, EventClaimFreed}

// ClaimEventType is the type of the event that reports a claim reaching
// state.
func ClaimEventType(state CSIVolumeClaimState) string {
	if state.Valid() {
		return claimEventTypes[state]
	}
	return fmt.Sprintf("Claim%s", state)
}

// Event is one change of the replicated state, at the raft index that made
// it. Key is the object's ID (a claim's event is keyed by its volume);
// Namespace is set for the objects that live in one (jobs, allocations,
// volumes).
type Event struct {
	Topic     EventTopic
	Type      string
	Key       string
	Namespace string `json:",omitempty"`
	Index     uint64
	Payload   EventPayload
}

// EventPayload is the object an event is about, as the HTTP API shows it
// at the event's index (never a volume's secrets, nor a node's secret):
// exactly one field is set. A volume or plugin comes joined as a read
// joins it (Schedulable, health counts, the claims' allocations), an
// allocation without its job (the Job topic has it). A node going down
// changes what its plugins' and volumes' joins show without an event on
// them: the Node topic has it.
type EventPayload struct {
	Node       *Node                `json:",omitempty"`
	Job        *Job                 `json:",omitempty"`
	Allocation *Allocation          `json:",omitempty"`
	Volume     *CSIVolume           `json:",omitempty"`
	Plugin     *CSIPlugin           `json:",omitempty"`
	Claim      *CSIVolumeClaimEvent `json:",omitempty"`
}

// CSIVolumeClaimEvent is a claim as an event shows it: the claim, with
// the volume it holds.
type CSIVolumeClaimEvent struct {
	VolumeID  string
	Namespace string
	PluginID  string
	CSIVolumeClaim
}

// Sanitized returns a copy fit for an API response: without the hash of
// the node's secret. The copy is shallow (its maps and lists are n's), as
// a payload of a row read from state, which nobody changes, needs: a deep
// copy would cost every node write a copy of its plugins and events.
func (n *Node) Sanitized() *Node {
	if n == nil {
		return nil
	}
	c := *n
	c.SecretHash = ""
	return &c
}

// EventNextRequest asks a server for the events after Index on Topics,
// waiting up to MaxWait for one. Topics maps a topic to the keys asked
// for; a key "*" (or none) asks for every key, and a topic "*" (or no
// topic at all) for every topic the token may read. Index 0 starts from
// the server's latest index. Namespace "*" asks for every namespace the
// token may read.
type EventNextRequest struct {
	Topics  map[EventTopic][]string
	Index   uint64
	MaxWait time.Duration
	QueryOptions
}

// EventNextResponse is the events after the request's Index, oldest
// first, and the index to ask after next: that of the last event (all of
// an index's events come in one answer), or the server's latest index
// when none came.
type EventNextResponse struct {
	Events []Event
	Index  uint64
}

// ParseEventTopic reads "Topic" or "Topic:key" as ?topic= gives it.
func ParseEventTopic(s string) (EventTopic, string, error) {
	name, key, hasKey := strings.Cut(s, ":")
	t := EventTopic(name)
	if t != TopicAll && !slices.Contains(EventTopics, t) {
		return "", "", NewError(CodeBadRequest, "topic %q is not one of %s, or * for all", name, EventTopicNames())
	}
	if hasKey && key == "" {
		return "", "", NewError(CodeBadRequest, "topic %q names an empty key; give Topic or Topic:key", s)
	}
	if t == TopicAll && hasKey && key != "*" {
		return "", "", NewError(CodeBadRequest, "topic %q: * takes no key; name a topic to filter by key", s)
	}
	if !hasKey {
		key = "*"
	}
	return t, key, nil
}

// EventTopicNames lists the topics for a message: "Node, Job, ...".
func EventTopicNames() string {
	names := make([]string, len(EventTopics))
	for i, t := range EventTopics {
		names[i] = string(t)
	}
	return strings.Join(names, ", ")
}
