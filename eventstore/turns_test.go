package eventstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/eventstore"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// LoadManyTx reads in the caller's transaction: its own appends, and on a
// pool of one connection, where LoadMany would wait for the transaction
// to end.
func TestLoadManyTxReadsInTheCallersTransaction(t *testing.T) {
	t.Parallel()
	backends := append(sqldbtest.Backends(), sqldbtest.Backend{Name: "sqlite-memory", Open: func(t testing.TB) (*sqldb.DB, string) {
		db, err := sqldb.Open(context.Background(), ":memory:")
		require.NoError(t, err)
		t.Cleanup(func() { _ = db.Close() })
		return db, ":memory:"
	}})
	for _, backend := range backends {
		t.Run(backend.Name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, backend)
			_, err := f.store.Append(f.ctx, "a", eventstore.NoStream, Opened{Owner: "A"})
			require.NoError(t, err)
			tx, err := f.db.BeginTxx(f.ctx, nil)
			require.NoError(t, err)
			defer func() { _ = tx.Rollback() }()
			_, err = f.store.AppendManyTx(f.ctx, tx, []eventstore.StreamAppend{
				{Stream: "a", Expected: eventstore.Exact(1), Events: []any{Deposited{Amount: 5}}},
				{Stream: "b", Expected: eventstore.NoStream, Events: []any{Opened{Owner: "B"}}},
			})
			require.NoError(t, err)
			got, err := f.store.LoadManyTx(f.ctx, tx, []string{"a", "b", "c"})
			require.NoError(t, err)
			require.Equal(t, []any{Opened{Owner: "A"}, Deposited{Amount: 5}}, events(got["a"]))
			require.Equal(t, []any{Opened{Owner: "B"}}, events(got["b"]))
			require.NotContains(t, got, "c")
			require.NoError(t, tx.Rollback())

			_, err = f.store.LoadManyTx(f.ctx, nil, []string{"a"})
			require.ErrorIs(t, err, eventstore.ErrInvalidArgument)
		})
	}
}

// TryTurnsTx takes the turns an append takes, without waiting for those
// another transaction holds, and keeps them until its transaction ends.
func TestTryTurnsTxSkipsStreamsOthersAreAppendingTo(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		f := setup(t, backend)
		second := f.secondStore(t)
		if backend.Name == "sqlite" {
			tx, err := f.db.BeginTxx(f.ctx, nil)
			require.NoError(t, err)
			defer func() { _ = tx.Rollback() }()
			busy, err := f.store.TryTurnsTx(f.ctx, tx, []string{"a", "b"})
			require.NoError(t, err)
			require.Empty(t, busy, "the immediate transaction holds every turn")
			return
		}
		other, err := sqldb.Open(f.ctx, f.dsn)
		require.NoError(t, err)
		t.Cleanup(func() { _ = other.Close() })

		appending, err := other.BeginTxx(f.ctx, nil)
		require.NoError(t, err)
		defer func() { _ = appending.Rollback() }()
		_, err = second.AppendTx(f.ctx, appending, "a", eventstore.NoStream, Opened{Owner: "A"})
		require.NoError(t, err)

		tx, err := f.db.BeginTxx(f.ctx, nil)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback() }()
		busy, err := f.store.TryTurnsTx(f.ctx, tx, []string{"a", "b", "b", "c"})
		require.NoError(t, err)
		require.Equal(t, []string{"a"}, busy, "a's turn is the appender's until it commits")
		busy, err = f.store.TryTurnsTx(f.ctx, tx, []string{"b", "c"})
		require.NoError(t, err)
		require.Empty(t, busy, "a transaction takes its own turns again at once")
		busy, err = second.TryTurnsTx(f.ctx, appending, []string{"a", "b"})
		require.NoError(t, err)
		require.Equal(t, []string{"b"}, busy, "b's turn is tx's until it ends")

		// tx appends to the streams it took without waiting for anyone.
		outcomes, err := f.store.AppendManyTx(f.ctx, tx, []eventstore.StreamAppend{
			{Stream: "b", Expected: eventstore.NoStream, Events: []any{Opened{Owner: "B"}}},
		})
		require.NoError(t, err)
		require.NoError(t, outcomes[0].Err())
		require.NoError(t, tx.Commit())
		busy, err = second.TryTurnsTx(f.ctx, appending, []string{"b", "c"})
		require.NoError(t, err)
		require.Empty(t, busy, "tx's turns ended with it")
		require.NoError(t, appending.Commit())
		f.requireVersion(t, "a", 1)
		f.requireVersion(t, "b", 1)

		_, err = f.store.TryTurnsTx(f.ctx, nil, []string{"a"})
		require.ErrorIs(t, err, eventstore.ErrInvalidArgument)
		tx, err = f.db.BeginTxx(f.ctx, nil)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback() }()
		_, err = f.store.TryTurnsTx(f.ctx, tx, []string{"a", ""})
		require.ErrorIs(t, err, eventstore.ErrInvalidArgument)
	})
}
