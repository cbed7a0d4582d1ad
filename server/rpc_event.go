package server

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/berth-csi/berth/acl"
	"github.com/berth-csi/berth/structs"
)

const (
	// maxEventWait bounds how long Event.Next waits for an event.
	maxEventWait = time.Minute
	// eventBatch is how many events one answer carries, give or take the
	// rest of the last raft entry's (an entry's events are never split).
	eventBatch = 256
)

// Event serves the event stream: a long poll of the change events this
// server applied. Every server applies every entry, so any server answers
// from its own buffer; a follower may answer a little behind the leader,
// and an index from another server resumes exactly (indexes are raft's).
// Only an index this server has not applied yet goes to the leader
// (eventsAhead).
type Event struct{ srv *Server }

// Next answers the events after args.Index on the topics the token may
// read, waiting up to MaxWait (at most maxEventWait) for one; a MaxWait of
// 0 answers at once. Asking for a topic the token may not read is
// PermissionDenied naming the topic; an index older than this server's
// buffer holds is Gone (see state/stream), and so is one that no server
// of the cluster has reached (eventsAhead). The token is checked on every
// call, so a stream ends at the first poll after its token is revoked.
func (e *Event) Next(ctx context.Context, args *structs.EventNextRequest, reply *structs.EventNextResponse) error {
	match, _, err := e.srv.eventFilter(args)
	if err != nil {
		return err
	}
	if args.Index > e.srv.fsm.AppliedIndex() {
		if done, err := e.srv.eventsAhead(ctx, args, reply); done {
			return err
		}
	}
	wctx, cancel := context.WithTimeout(ctx, min(max(args.MaxWait, 0), maxEventWait))
	defer cancel()
	events, next, err := e.srv.fsm.Events().Next(wctx, args.Index, eventBatch, match)
	if err != nil {
		return fmt.Errorf("server %s: %w", e.srv.config.NodeName, err)
	}
	reply.Events, reply.Index = events, next
	return nil
}

// eventsAhead answers a request for the events after an index this server
// has not applied. An index above the leader's last log index was never
// the cluster's: it comes from another cluster, or from this one before it
// was rebuilt, and a subscriber would wait there, silently, while the
// changes it missed come at lower indexes. The leader refuses it; a
// follower, which may only be behind, passes the request on to the
// leader, whose log has every committed index. done is false when this
// server should answer itself.
func (s *Server) eventsAhead(ctx context.Context, args *structs.EventNextRequest, reply *structs.EventNextResponse) (bool, error) {
	if s.isLeader() {
		if last := s.raft.LastIndex(); args.Index > last {
			return true, structs.NewError(structs.CodeGone,
				"event stream: index %d is ahead of the cluster's last index, %d: it comes from another cluster, or from this one "+
					"before it was rebuilt. List the objects again (GET /v1/volumes, /v1/nodes, ...), then stream after the lists' "+
					"X-Berth-Index", args.Index, last)
		}
		return false, nil
	}
	leader := s.leaderAddr()
	if args.IsForwarded() || leader == "" || leader == s.rpcAddr {
		return false, nil // no leader to ask (or it moved on the way): wait here, as for a lag
	}
	args.SetForwarded()
	fctx, cancel := context.WithTimeout(ctx, min(max(args.MaxWait, 0), maxEventWait)+forwardTimeout)
	defer cancel()
	return true, s.pool.Call(fctx, leader, "Event.Next", args, reply)
}

// eventTopicRule is what reading a topic needs: a cluster-wide check, or
// a capability in the event's namespace.
type eventTopicRule struct {
	scope *scopeCheck
	nsCap string
}

var eventTopicRules = map[structs.EventTopic]eventTopicRule{
	structs.TopicNode:       {scope: &needNodeRead},
	structs.TopicCSIPlugin:  {scope: &needPluginRead},
	structs.TopicJob:        {nsCap: acl.CapReadJob},
	structs.TopicAllocation: {nsCap: acl.CapReadJob},
	structs.TopicCSIVolume:  {nsCap: acl.CapCSIReadVolume},
}

// eventFilter checks the request's topics against its token and returns
// what an event must match to be sent: a topic asked for and readable, a
// key asked for, and the request's namespace (with namespace "*", any the
// token may read the topic in); and the token's ACL.
func (s *Server) eventFilter(args *structs.EventNextRequest) (func(*structs.Event) bool, *acl.ACL, error) {
	a, _, err := s.resolveToken(args.AuthToken)
	if err != nil {
		return nil, nil, err
	}
	ns := args.RequestNamespace()
	allNS := ns == "*"
	allowed := func(t structs.EventTopic) (bool, string) {
		r, ok := eventTopicRules[t]
		switch {
		case !ok:
			return false, ""
		case r.scope != nil:
			return r.scope.allow(a), r.scope.name
		case allNS:
			return true, "" // checked per event
		}
		return a.AllowNamespaceOperation(ns, r.nsCap), fmt.Sprintf("capability %q in namespace %q", r.nsCap, ns)
	}

	keys := map[structs.EventTopic][]string{} // nil: every key
	wantAll := len(args.Topics) == 0
	for t, ks := range args.Topics {
		if t == structs.TopicAll {
			wantAll = true
			continue
		}
		if _, ok := eventTopicRules[t]; !ok {
			return nil, nil, structs.NewError(structs.CodeBadRequest, "event stream: topic %q is not one of %s, or * for all", t, structs.EventTopicNames())
		}
		if ok, need := allowed(t); !ok {
			return nil, nil, errPermission("token lacks %s, which topic %s needs", need, t)
		}
		if slices.Contains(ks, "*") || len(ks) == 0 {
			keys[t] = nil
		} else {
			keys[t] = ks
		}
	}
	if wantAll {
		for _, t := range structs.EventTopics {
			if ok, _ := allowed(t); ok {
				keys[t] = nil
			}
		}
		if len(keys) == 0 {
			return nil, nil, errPermission("token may read none of the event topics (%s)", structs.EventTopicNames())
		}
	}
	return func(e *structs.Event) bool {
		ks, ok := keys[e.Topic]
		switch {
		case !ok, ks != nil && !slices.Contains(ks, e.Key):
			return false
		case e.Namespace == "":
			return true
		case allNS:
			return a.AllowNamespaceOperation(e.Namespace, eventTopicRules[e.Topic].nsCap)
		}
		return e.Namespace == ns
	}, a, nil
}
