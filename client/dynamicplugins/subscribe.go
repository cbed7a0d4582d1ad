package dynamicplugins

import (
	"context"
	"sort"
)

// EventType says what happened to a plugin.
type EventType int

const (
	// EventRegistered: the plugin is registered, or its registration was
	// replaced; Plugin is the current registration.
	EventRegistered EventType = iota + 1
	// EventDeregistered: the plugin is gone; Plugin is its last
	// registration the subscriber was sent.
	EventDeregistered
)

func (t EventType) String() string {
	switch t {
	case EventRegistered:
		return "registered"
	case EventDeregistered:
		return "deregistered"
	}
	return "unknown"
}

// Event is a change to one registration (PluginInfo.Key): a plugin's
// monolith, or one of its split instances. Plugin is the subscriber's own
// copy.
type Event struct {
	Type   EventType
	Plugin *PluginInfo
}

// subscription wakes its goroutine when the registry changes. wake holds
// at most one pending signal, so a change never blocks on a subscriber.
type subscription struct {
	wake chan struct{}
}

// Subscribe returns a channel of changes to the registry. It first
// receives every registered plugin as an EventRegistered, then each change
// as it happens. A subscriber that reads slowly is never waited for; it
// receives the difference between what it was sent and the current state,
// so it may skip intermediate states but never ends in a wrong one. The
// channel is closed when ctx ends.
func (r *Registry) Subscribe(ctx context.Context) <-chan Event {
	sub := &subscription{wake: make(chan struct{}, 1)}
	r.mu.Lock()
	r.subs[sub] = struct{}{}
	r.mu.Unlock()

	out := make(chan Event)
	go func() {
		defer close(out)
		defer func() {
			r.mu.Lock()
			delete(r.subs, sub)
			r.mu.Unlock()
		}()
		sent := map[string]entry{} // what this subscriber was told, by PluginInfo.Key
		for {
			for _, ch := range r.changesSince(sent) {
				ev := Event{Type: EventRegistered, Plugin: ch.info.Copy()}
				if ch.gone {
					ev.Type = EventDeregistered
				}
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
				if ch.gone {
					delete(sent, ch.info.Key())
				} else {
					sent[ch.info.Key()] = ch.entry
				}
			}
			select {
			case <-sub.wake:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// change is one difference between a subscriber's view and the registry.
type change struct {
	entry
	gone bool
}

// changesSince lists what differs from sent: deregistrations first, then
// registrations, each sorted by plugin ID.
func (r *Registry) changesSince(sent map[string]entry) []change {
	r.mu.Lock()
	defer r.mu.Unlock()
	var gone, changed []change
	for id, e := range sent {
		if _, ok := r.plugins[id]; !ok {
			gone = append(gone, change{entry: e, gone: true})
		}
	}
	for id, e := range r.plugins {
		if s, ok := sent[id]; !ok || s.gen != e.gen {
			changed = append(changed, change{entry: e})
		}
	}
	byID := func(cs []change) {
		sort.Slice(cs, func(i, j int) bool { return cs[i].info.Key() < cs[j].info.Key() })
	}
	byID(gone)
	byID(changed)
	return append(gone, changed...)
}

// wakeLocked signals every subscription that the registry changed.
func (r *Registry) wakeLocked() {
	for sub := range r.subs {
		select {
		case sub.wake <- struct{}{}:
		default: // already signalled
		}
	}
}
