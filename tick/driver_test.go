package tick

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// TestDriverConformance holds every database's driver to the contract of
// the driver interface, with one test body: the cursor's compare-and-swap
// with and without a fencing term, and the lease acquired, renewed, lost
// and released by term.
func TestDriverConformance(t *testing.T) {
	t.Parallel()
	for _, backend := range sqldbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			t.Parallel()
			db, _ := backend.Open(t)
			ctx := context.Background()
			s, err := NewSQLStore(ctx, db.DB)
			require.NoError(t, err)
			d := s.d
			require.Equal(t, newDriver(db.DB), d, "the driver is picked from the database")

			t.Run("lease", func(t *testing.T) {
				l, err := d.lease(ctx)
				require.NoError(t, err)
				require.Zero(t, l, "no lease taken yet")
				l, err = d.acquireLease(ctx, "a", 100, 200)
				require.NoError(t, err)
				require.Equal(t, leaseRow{"a", 1, 200}, l, "the first lease is term 1")
				l, err = d.acquireLease(ctx, "b", 150, 250)
				require.NoError(t, err)
				require.Equal(t, leaseRow{"a", 1, 200}, l, "b cannot take a lease that has not expired")
				l, err = d.acquireLease(ctx, "a", 150, 300)
				require.NoError(t, err)
				require.Equal(t, leaseRow{"a", 1, 300}, l, "renewing keeps the term")
				l, err = d.acquireLease(ctx, "b", 300, 400)
				require.NoError(t, err)
				require.Equal(t, leaseRow{"b", 2, 400}, l, "an expired lease changes hands with a new term")
				require.NoError(t, d.releaseLease(ctx, "a", 1))
				l, err = d.lease(ctx)
				require.NoError(t, err)
				require.Equal(t, leaseRow{"b", 2, 400}, l, "a stale holder cannot release its successor's lease")
				require.NoError(t, d.releaseLease(ctx, "b", 2))
				l, err = d.lease(ctx)
				require.NoError(t, err)
				require.Equal(t, leaseRow{"", 2, 0}, l, "released: no holder, the term kept")
				l, err = d.acquireLease(ctx, "a", 301, 500)
				require.NoError(t, err)
				require.Equal(t, leaseRow{"a", 3, 500}, l, "a released lease is free at once, with a new term")
			})

			t.Run("cursor compare-and-swap", func(t *testing.T) {
				_, ok, err := d.cursor(ctx, Day)
				require.NoError(t, err)
				require.False(t, ok)
				moved, err := d.createCursor(ctx, Day, 10, 0)
				require.NoError(t, err)
				require.True(t, moved)
				moved, err = d.createCursor(ctx, Day, 11, 0)
				require.NoError(t, err)
				require.False(t, moved, "a unit's first cursor is created once")
				moved, err = d.moveCursor(ctx, Day, 9, 12, 0)
				require.NoError(t, err)
				require.False(t, moved, "a cursor moves only from where it stands")
				moved, err = d.moveCursor(ctx, Day, 10, 12, 0)
				require.NoError(t, err)
				require.True(t, moved)
				ns, ok, err := d.cursor(ctx, Day)
				require.NoError(t, err)
				require.True(t, ok)
				require.EqualValues(t, 12, ns)

				// The lease is at term 3 (see "lease").
				moved, err = d.moveCursor(ctx, Day, 12, 13, 2)
				require.NoError(t, err)
				require.False(t, moved, "a stale term cannot move a cursor")
				moved, err = d.createCursor(ctx, Hour, 13, 2)
				require.NoError(t, err)
				require.False(t, moved, "a stale term cannot create a cursor")
				moved, err = d.moveCursor(ctx, Day, 12, 13, 3)
				require.NoError(t, err)
				require.True(t, moved)
				moved, err = d.createCursor(ctx, Hour, 14, 3)
				require.NoError(t, err)
				require.True(t, moved)
				all, err := d.cursors(ctx)
				require.NoError(t, err)
				require.Equal(t, map[Unit]int64{Day: 13, Hour: 14}, all)
			})
		})
	}
}
