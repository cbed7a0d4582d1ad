package state

import (
	"sync"

	"github.com/hashicorp/go-memdb"
)

// StateStore is berth's state: a go-memdb database written only by the FSM.
type StateStore struct {
	db *memdb.MemDB
	// events receives the events of every write (events.go); nil for
	// none, and always nil on a snapshot.
	events EventSink

	abandonOnce *sync.Once
	abandonCh   chan struct{}
}

// StateSnapshot is a point-in-time copy of a StateStore, for reads (a
// snapshot persist, a consistent multi-read). Writes to it change only the
// snapshot.
type StateSnapshot struct {
	StateStore
}

// NewStateStore returns an empty state store.
func NewStateStore() (*StateStore, error) {
	db, err := memdb.NewMemDB(Schema())
	if err != nil {
		return nil, errInternal("create memdb", err)
	}
	return newStateStore(db), nil
}

func newStateStore(db *memdb.MemDB) *StateStore {
	return &StateStore{db: db, abandonOnce: new(sync.Once), abandonCh: make(chan struct{})}
}

// Snapshot returns a point-in-time copy of the store. It costs O(1): memdb's
// trees are immutable and shared.
func (s *StateStore) Snapshot() (*StateSnapshot, error) {
	return &StateSnapshot{StateStore: *newStateStore(s.db.Snapshot())}, nil
}

// Abandon marks the store as replaced (by a snapshot restore): AbandonCh is
// closed so blocking queries on it wake and re-read the new store. Safe to
// call more than once.
func (s *StateStore) Abandon() {
	s.abandonOnce.Do(func() { close(s.abandonCh) })
}

// AbandonCh is closed when a restore replaces this store.
func (s *StateStore) AbandonCh() <-chan struct{} { return s.abandonCh }

// Index returns the last raft index that changed table, 0 if none did.
func (s *StateStore) Index(table string) (uint64, error) {
	txn := s.db.Txn(false)
	raw, err := txn.First(TableIndex, indexID, table)
	if err != nil {
		return 0, errInternal("read index of "+table, err)
	}
	if raw == nil {
		return 0, nil
	}
	return raw.(*IndexEntry).Value, nil
}

// IndexWatch is Index for a blocking query: ws fires when the table's
// index moves.
func (s *StateStore) IndexWatch(ws memdb.WatchSet, table string) (uint64, error) {
	txn := s.db.Txn(false)
	watch, raw, err := txn.FirstWatch(TableIndex, indexID, table)
	if err != nil {
		return 0, errInternal("read index of "+table, err)
	}
	ws.Add(watch)
	if raw == nil {
		return 0, nil
	}
	return raw.(*IndexEntry).Value, nil
}

// LatestIndex returns the last raft index that changed any table.
func (s *StateStore) LatestIndex() (uint64, error) {
	txn := s.db.Txn(false)
	iter, err := txn.Get(TableIndex, indexID)
	if err != nil {
		return 0, errInternal("read index table", err)
	}
	var max uint64
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if v := raw.(*IndexEntry).Value; v > max {
			max = v
		}
	}
	return max, nil
}

// TableRows iterates every row of a table in primary index order, for a
// snapshot persist.
func (s *StateStore) TableRows(table string) (memdb.ResultIterator, error) {
	txn := s.db.Txn(false)
	iter, err := txn.Get(table, indexID)
	if err != nil {
		return nil, errInternal("list table "+table, err)
	}
	return iter, nil
}

// bumpIndex records that index changed table. An index never goes back.
func bumpIndex(txn *memdb.Txn, index uint64, table string) error {
	raw, err := txn.First(TableIndex, indexID, table)
	if err != nil {
		return errInternal("read index of "+table, err)
	}
	if raw != nil && raw.(*IndexEntry).Value >= index {
		return nil
	}
	if err := txn.Insert(TableIndex, &IndexEntry{Key: table, Value: index}); err != nil {
		return errInternal("update index of "+table, err)
	}
	return nil
}

// bumpIndexes bumps every table in tables.
func bumpIndexes(txn *memdb.Txn, index uint64, tables ...string) error {
	for _, t := range tables {
		if err := bumpIndex(txn, index, t); err != nil {
			return err
		}
	}
	return nil
}

// getWatch runs a Get and adds its watch channel to ws.
func getWatch(txn *memdb.Txn, ws memdb.WatchSet, table, index string, args ...any) (memdb.ResultIterator, error) {
	iter, err := txn.Get(table, index, args...)
	if err != nil {
		return nil, errInternal("read "+table+" by "+index, err)
	}
	ws.Add(iter.WatchCh())
	return iter, nil
}

// firstWatch runs a FirstWatch and adds its watch channel to ws.
func firstWatch(txn *memdb.Txn, ws memdb.WatchSet, table, index string, args ...any) (any, error) {
	ch, raw, err := txn.FirstWatch(table, index, args...)
	if err != nil {
		return nil, errInternal("read "+table+" by "+index, err)
	}
	ws.Add(ch)
	return raw, nil
}
