package tick

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// storeFactory opens a fresh store; second opens another handle on the same
// data (another process, for SQL).
type storeFactory struct {
	name string
	open func(t *testing.T) (store CursorStore, second func() CursorStore)
}

func storeFactories() []storeFactory {
	out := []storeFactory{{"memory", func(*testing.T) (CursorStore, func() CursorStore) {
		s := NewMemoryStore()
		return s, func() CursorStore { return s }
	}}}
	for _, b := range sqldbtest.Backends() {
		out = append(out, storeFactory{b.Name, func(t *testing.T) (CursorStore, func() CursorStore) {
			return openSQLStore(t, b)
		}})
	}
	return out
}

func openSQLStore(t *testing.T, b sqldbtest.Backend) (*SQLStore, func() CursorStore) {
	t.Helper()
	db, dsn := b.Open(t)
	s, err := NewSQLStore(context.Background(), db.DB)
	require.NoError(t, err)
	return s, func() CursorStore {
		other, err := NewSQLStore(context.Background(), openDSN(t, dsn))
		require.NoError(t, err)
		return other
	}
}

func TestCursorStore(t *testing.T) {
	t.Parallel()
	for _, f := range storeFactories() {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, second := f.open(t)
			other := second()
			t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			t1 := t0.Add(time.Minute)

			cur, err := s.Cursor(ctx, Minute)
			require.NoError(t, err)
			require.True(t, cur.IsZero(), "no cursor yet")

			require.NoError(t, s.Advance(ctx, Minute, time.Time{}, t0, 0))
			require.ErrorIs(t, other.Advance(ctx, Minute, time.Time{}, t0, 0), ErrCursorMoved, "a second first write loses")
			require.NoError(t, other.Advance(ctx, Minute, t0, t1, 0))
			require.ErrorIs(t, s.Advance(ctx, Minute, t0, t1.Add(time.Minute), 0), ErrCursorMoved, "stale from")
			cur, err = s.Cursor(ctx, Minute)
			require.NoError(t, err)
			require.True(t, cur.Equal(t1), "cursor %v", cur)

			// The lease: free, renewed by its holder, refused to others
			// until it expires, then taken over with a new fencing term.
			a, err := s.AcquireLease(ctx, "a", t0, time.Minute)
			require.NoError(t, err)
			require.Equal(t, Lease{Holder: "a", Term: 1, Expires: t0.Add(time.Minute)}, utcLease(a))
			b, err := other.AcquireLease(ctx, "b", t0.Add(59*time.Second), time.Minute)
			require.NoError(t, err)
			require.Equal(t, "a", b.Holder, "a live lease is not taken")
			a, err = s.AcquireLease(ctx, "a", t0.Add(30*time.Second), time.Minute)
			require.NoError(t, err)
			require.Equal(t, int64(1), a.Term, "renewal keeps the term")
			b, err = other.AcquireLease(ctx, "b", t0.Add(90*time.Second), time.Minute)
			require.NoError(t, err)
			require.Equal(t, Lease{Holder: "b", Term: 2, Expires: t0.Add(150 * time.Second)}, utcLease(b))

			// The stale holder's write is fenced off; the new one's passes.
			require.ErrorIs(t, s.Advance(ctx, Minute, t1, t1.Add(time.Minute), a.Term), ErrLeaseLost)
			require.ErrorIs(t, s.Advance(ctx, Hour, time.Time{}, t0, a.Term), ErrLeaseLost)
			require.NoError(t, other.Advance(ctx, Minute, t1, t1.Add(time.Minute), b.Term))

			// Releasing: a stale holder releases nothing; the holder's
			// release frees the lease at once, for a new term.
			require.NoError(t, s.ReleaseLease(ctx, "a", a.Term))
			a, err = s.AcquireLease(ctx, "a", t0.Add(100*time.Second), time.Minute)
			require.NoError(t, err)
			require.Equal(t, "b", a.Holder, "a stale holder's release leaves the lease alone")
			require.NoError(t, other.ReleaseLease(ctx, "b", b.Term))
			c, err := s.AcquireLease(ctx, "c", t0.Add(100*time.Second), time.Minute)
			require.NoError(t, err)
			require.Equal(t, Lease{Holder: "c", Term: 3, Expires: t0.Add(160 * time.Second)}, utcLease(c))
			require.ErrorIs(t, other.Advance(ctx, Minute, t1.Add(time.Minute), t1.Add(2*time.Minute), b.Term), ErrLeaseLost)
			require.NoError(t, other.ReleaseLease(ctx, "c", b.Term), "a release with an old term is a no-op")
			c, err = other.AcquireLease(ctx, "b", t0.Add(101*time.Second), time.Minute)
			require.NoError(t, err)
			require.Equal(t, "c", c.Holder)
			b = c

			if st, ok := s.(interface {
				Cursors(context.Context) (map[Unit]time.Time, error)
				Lease(context.Context) (Lease, error)
			}); ok {
				all, err := st.Cursors(ctx)
				require.NoError(t, err)
				require.Len(t, all, 1)
				require.True(t, all[Minute].Equal(t1.Add(time.Minute)))
				l, err := st.Lease(ctx)
				require.NoError(t, err)
				require.Equal(t, utcLease(b), utcLease(l))
			}
		})
	}
}

func utcLease(l Lease) Lease {
	l.Expires = l.Expires.UTC()
	return l
}

func TestNewSQLStoreRejectsNil(t *testing.T) {
	t.Parallel()
	_, err := NewSQLStore(context.Background(), nil)
	require.ErrorIs(t, err, ErrInvalidOption)
}

// A released lease is free whatever the clock says, also before 1970,
// where the released row's expiry (the epoch) is still in the future.
func TestReleasedLeaseIsFreeOnAClockBefore1970(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t0 := time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, f := range storeFactories() {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			s, second := f.open(t)
			a, err := s.AcquireLease(ctx, "a", t0, time.Minute)
			require.NoError(t, err)
			require.NoError(t, s.ReleaseLease(ctx, "a", a.Term))
			b, err := second().AcquireLease(ctx, "b", t0.Add(time.Second), time.Minute)
			require.NoError(t, err)
			require.Equal(t, "b", b.Holder)
			require.Equal(t, a.Term+1, b.Term)
		})
	}
}
