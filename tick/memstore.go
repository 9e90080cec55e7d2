package tick

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/passage-of-time/passage/internal/timefmt"
)

// MemoryStore is a CursorStore held in memory: for tests, and for a single
// process that may lose its cursors on restart. Tickers in one process may
// share it, lease included.
type MemoryStore struct {
	mu      sync.Mutex
	cursors map[Unit]time.Time
	lease   Lease
}

var _ CursorStore = (*MemoryStore)(nil)

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{cursors: map[Unit]time.Time{}}
}

// Cursor implements CursorStore.
func (s *MemoryStore) Cursor(_ context.Context, unit Unit) (time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cursors[unit], nil
}

// Advance implements CursorStore.
func (s *MemoryStore) Advance(_ context.Context, unit Unit, from, to time.Time, term int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if term != 0 && term != s.lease.Term {
		return fmt.Errorf("%w: advancing %s with term %d, lease is at term %d", ErrLeaseLost, unit, term, s.lease.Term)
	}
	if cur := s.cursors[unit]; !cur.Equal(from) {
		return fmt.Errorf("%w: %s cursor is %s, expected %s", ErrCursorMoved, unit, timefmt.Format(cur), timefmt.Format(from))
	}
	s.cursors[unit] = to
	return nil
}

// AcquireLease implements CursorStore.
func (s *MemoryStore) AcquireLease(_ context.Context, holder string, now time.Time, ttl time.Duration) (Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.lease.Holder == holder:
	case s.lease.Holder == "" || !now.Before(s.lease.Expires):
		s.lease.Holder = holder
		s.lease.Term++
	default:
		return s.lease, nil
	}
	s.lease.Expires = now.Add(ttl)
	return s.lease, nil
}

// ReleaseLease implements CursorStore.
func (s *MemoryStore) ReleaseLease(_ context.Context, holder string, term int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lease.Holder == holder && s.lease.Term == term {
		s.lease.Holder, s.lease.Expires = "", time.Time{}
	}
	return nil
}

// Cursors returns every unit's cursor.
func (s *MemoryStore) Cursors(context.Context) (map[Unit]time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.cursors), nil
}

// Lease returns the lease as it stands; the zero Lease when none was taken.
func (s *MemoryStore) Lease(context.Context) (Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lease, nil
}
