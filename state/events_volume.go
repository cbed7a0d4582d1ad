package state

import (
	"sort"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/structs"
)

// volumeEvents reports a volume row's change: registered or deregistered,
// else one event per claim whose state moved (or whose release step
// failed again, or whose condition turned abnormal or back), else, when
// no claim moved, VolumeUpdated (a claim's usage changed among others). A claim moved
// twice within one write (one raft entry) shows its last state only.
func volumeEvents(join *eventJoin, index uint64, c memdb.Change) []structs.Event {
	before, after := beforeAfter[structs.CSIVolume](c)
	vol := after
	typ := structs.EventVolumeUpdated
	switch {
	case after == nil:
		vol, typ = before, structs.EventVolumeDeregistered
	case before == nil:
		typ = structs.EventVolumeRegistered
	default:
		if evs := claimEvents(index, before, after); len(evs) > 0 {
			return evs
		}
	}
	// Joined with its plugin's health and its claims' allocations, as GET
	// shows it (the row alone if the join fails: it reads memdb only).
	// The plugin row is read once for the commit's every volume.
	if p := join.plugin(vol.PluginID); p.err == nil {
		if joined, err := joinVolumeTxn(join.read, nil, vol, p.row); err == nil {
			vol = joined
		}
	}
	return []structs.Event{{Topic: structs.TopicCSIVolume, Type: typ, Key: vol.ID, Namespace: vol.Namespace,
		Index: index, Payload: structs.EventPayload{Volume: vol.Sanitized()}}}
}

// claimEvents compares the claims of a volume's two rows, alloc by alloc
// in ID order. A claim gone from the row was freed (unless it was kept
// freed already, and garbage collection removed it).
func claimEvents(index uint64, before, after *structs.CSIVolume) []structs.Event {
	was, now := claimsByAlloc(before), claimsByAlloc(after)
	ids := make([]string, 0, len(was)+len(now))
	for id := range was {
		ids = append(ids, id)
	}
	for id := range now {
		if _, ok := was[id]; !ok {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)

	var out []structs.Event
	for _, id := range ids {
		old, cur := was[id], now[id]
		var typ string
		switch {
		case cur == nil && old.State == structs.CSIVolumeClaimStateFreed:
			continue
		case cur == nil:
			// The row keeps the claim freed, with its timeline, among
			// its last freed claims.
			if kept := freedNow(before, after, id); kept != nil {
				cur, typ = kept, structs.EventClaimFreed
				break
			}
			freed := *old
			freed.State = structs.CSIVolumeClaimStateFreed
			// Dropped already: when and how it went are not known here.
			freed.Attempts, freed.LastError, freed.NextAttemptAt, freed.UpdatedAt = 0, "", time.Time{}, time.Time{}
			cur, typ = &freed, structs.EventClaimFreed
		case old == nil || old.State != cur.State:
			typ = structs.ClaimEventType(cur.State)
		case cur.LastError != "" && (cur.Attempts != old.Attempts || cur.LastError != old.LastError ||
			!cur.NextAttemptAt.Equal(old.NextAttemptAt)):
			typ = structs.EventClaimReleaseRetry
		case cur.Usage.IsAbnormal() && !old.Usage.IsAbnormal():
			typ = structs.EventVolumeConditionAbnormal
		case old.Usage.IsAbnormal() && !cur.Usage.IsAbnormal():
			typ = structs.EventVolumeConditionNormal
		default:
			continue // renewed, its ExternalNodeID learnt, or its usage: no move
		}
		out = append(out, structs.Event{Topic: structs.TopicCSIVolume, Type: typ, Key: after.ID,
			Namespace: after.Namespace, Index: index, Payload: structs.EventPayload{Claim: &structs.CSIVolumeClaimEvent{
				VolumeID: after.ID, Namespace: after.Namespace, PluginID: after.PluginID, CSIVolumeClaim: *cur}}})
	}
	return out
}

// freedNow is alloc id's claim that after keeps freed and before did
// not, nil if none.
func freedNow(before, after *structs.CSIVolume, id string) *structs.CSIVolumeClaim {
	for _, c := range before.FreedClaims {
		if c != nil && c.AllocID == id {
			return nil
		}
	}
	for _, c := range after.FreedClaims {
		if c != nil && c.AllocID == id {
			return c
		}
	}
	return nil
}

// claimsByAlloc is every claim of a volume (read, write or past) by its
// alloc ID.
func claimsByAlloc(vol *structs.CSIVolume) map[string]*structs.CSIVolumeClaim {
	out := map[string]*structs.CSIVolumeClaim{}
	for _, m := range claimMaps(vol) {
		for id, c := range m {
			if c != nil {
				out[id] = c
			}
		}
	}
	return out
}
