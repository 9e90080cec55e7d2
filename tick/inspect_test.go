package tick

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

func TestReadCursorsAndLeaseReadWhatTheStoreWrote(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)

			// Nothing yet: no tables, then tables without rows.
			for range 2 {
				cursors, err := ReadCursors(ctx, db)
				require.NoError(t, err)
				require.Empty(t, cursors)
				lease, err := ReadLease(ctx, db)
				require.NoError(t, err)
				require.Equal(t, Lease{}, lease)
				tables, err := sqldb.Tables(ctx, db)
				require.NoError(t, err)
				if len(tables) == 0 {
					_, err = NewSQLStore(ctx, db.DB)
					require.NoError(t, err)
				}
			}

			store, err := NewSQLStore(ctx, db.DB)
			require.NoError(t, err)
			at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
			first, err := store.AcquireLease(ctx, "host-a", at, time.Minute)
			require.NoError(t, err)
			want := map[Unit]time.Time{Minute: at, Hour: at, Day: at.Truncate(24 * time.Hour)}
			for u, c := range want {
				require.NoError(t, store.Advance(ctx, u, time.Time{}, c, first.Term))
			}
			require.NoError(t, store.Advance(ctx, Minute, at, at.Add(3*time.Minute), first.Term))
			want[Minute] = at.Add(3 * time.Minute)

			cursors, err := ReadCursors(ctx, db)
			require.NoError(t, err)
			stored, err := store.Cursors(ctx)
			require.NoError(t, err)
			require.Equal(t, stored, cursors)
			require.Len(t, cursors, len(want))
			for u, c := range want {
				require.True(t, c.Equal(cursors[u]), "%s: %s, want %s", u, cursors[u], c)
			}

			lease, err := ReadLease(ctx, db)
			require.NoError(t, err)
			require.Equal(t, first, lease)
			require.Equal(t, Lease{Holder: "host-a", Term: 1, Expires: at.Add(time.Minute)}, lease)

			// Lapsed and taken by another: a new term; released: no holder.
			second, err := store.AcquireLease(ctx, "host-b", at.Add(2*time.Minute), time.Minute)
			require.NoError(t, err)
			require.Equal(t, int64(2), second.Term)
			lease, err = ReadLease(ctx, db)
			require.NoError(t, err)
			require.Equal(t, second, lease)
			require.NoError(t, store.ReleaseLease(ctx, "host-b", second.Term))
			lease, err = ReadLease(ctx, db)
			require.NoError(t, err)
			fromStore, err := store.Lease(ctx)
			require.NoError(t, err)
			require.Equal(t, fromStore, lease)
			require.Equal(t, "", lease.Holder)
			require.Equal(t, int64(2), lease.Term)

			// Through a transaction, as a status page takes one snapshot.
			tx, err := db.BeginTxx(ctx, nil)
			require.NoError(t, err)
			defer func() { _ = tx.Rollback() }()
			inTx, err := ReadCursors(ctx, tx)
			require.NoError(t, err)
			require.Equal(t, cursors, inTx)
		})
	}
}

func TestReadingAnEmptyDatabaseCreatesNothing(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			_, err := ReadCursors(ctx, db)
			require.NoError(t, err)
			_, err = ReadLease(ctx, db)
			require.NoError(t, err)
			tables, err := sqldb.Tables(ctx, db)
			require.NoError(t, err)
			require.Empty(t, tables)
		})
	}
}

// HasState tells a database the ticker never ran on from one it did,
// creates nothing to find out, and does not take another package's
// tables for the ticker's.
func TestHasStateSaysWhetherATickerRanOnTheDatabase(t *testing.T) {
	t.Parallel()
	sqldbtest.CheckHasState(t, HasState, "todolist_items", func(t *testing.T, db *sqldb.DB) *SQLStore {
		store, err := NewSQLStore(context.Background(), db.DB)
		require.NoError(t, err)
		return store
	}, nil)
}
