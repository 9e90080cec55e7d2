package eventstore_test

import (
	"context"
	"testing"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/eventstore"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// LoadManyTx and LoadTx read in the caller's transaction: its own
// appends, and on a pool of one connection, where LoadMany and Load would
// wait for the transaction to end.
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
			one, err := f.store.LoadTx(f.ctx, tx, "a", 2)
			require.NoError(t, err)
			require.Equal(t, []any{Deposited{Amount: 5}}, events(one), "LoadTx from version 2, its own append")
			require.NoError(t, tx.Rollback())

			_, err = f.store.LoadManyTx(f.ctx, nil, []string{"a"})
			require.ErrorIs(t, err, eventstore.ErrInvalidArgument)
			_, err = f.store.LoadTx(f.ctx, nil, "a", 0)
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

// Turns append with the versions they loaded: each entry is checked
// against where the stream stood once its turn was taken, moved on by the
// entries before it, and a conflict fails only its entry.
func TestTurnsAppendAtTheVersionsTheyLoaded(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		// Advisory locks are the database's, not a schema's: names of
		// their own keep parallel tests out of each other's turns.
		a, b, c, d := t.Name()+"/a", t.Name()+"/b", t.Name()+"/c", t.Name()+"/d"
		var hooked []string
		f := setup(t, backend, eventstore.WithInTransaction(func(_ context.Context, _ sqlx.ExtContext, recorded []eventstore.Recorded) error {
			hooked = append(hooked, recorded[0].Stream)
			return nil
		}))
		_, err := f.store.Append(f.ctx, a, eventstore.NoStream, Opened{Owner: "A"}, Deposited{Amount: 1})
		require.NoError(t, err)
		hooked = nil

		tx, err := f.db.BeginTxx(f.ctx, nil)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback() }()
		turns, err := f.store.TakeTurnsTx(f.ctx, tx, []string{a, b, c})
		require.NoError(t, err)
		require.Empty(t, turns.Busy())
		require.Equal(t, []any{Opened{Owner: "A"}, Deposited{Amount: 1}}, events(turns.Events(a)))
		require.Nil(t, turns.Events(b))

		outcomes, err := turns.AppendMany(f.ctx, []eventstore.StreamAppend{
			{Stream: a, Expected: eventstore.Exact(2), Events: []any{Deposited{Amount: 2}}},
			{Stream: b, Expected: eventstore.NoStream, Events: []any{Opened{Owner: "B"}}},
			{Stream: a, Expected: eventstore.Exact(2), Events: []any{Deposited{Amount: 99}}},
			{Stream: c, Expected: eventstore.Exact(5), Events: []any{Deposited{Amount: 99}}},
		})
		require.NoError(t, err)
		require.NoError(t, outcomes[0].Err())
		require.Equal(t, int64(3), outcomes[0].Result.Version)
		require.NotZero(t, outcomes[0].Result.Recorded[0].Position)
		require.NoError(t, outcomes[1].Err())
		require.Equal(t, int64(1), outcomes[1].Result.Version)
		require.Equal(t, &eventstore.VersionConflictError{Stream: a, Expected: eventstore.Exact(2), Actual: 3}, outcomes[2].Conflict,
			"the first entry moved a on")
		require.Equal(t, &eventstore.VersionConflictError{Stream: c, Expected: eventstore.Exact(5), Actual: 0}, outcomes[3].Conflict)
		require.Equal(t, []string{a, b}, hooked, "the in-transaction hooks ran for the appended entries")

		// A second append through the same turns starts where the first
		// left the streams.
		outcomes, err = turns.AppendMany(f.ctx, []eventstore.StreamAppend{
			{Stream: a, Expected: eventstore.Exact(3), Events: []any{Withdrawn{Amount: 1}}},
			{Stream: b, Expected: eventstore.NoStream, Events: []any{Opened{Owner: "B again"}}},
		})
		require.NoError(t, err)
		require.NoError(t, outcomes[0].Err())
		require.Equal(t, &eventstore.VersionConflictError{Stream: b, Expected: eventstore.NoStream, Actual: 1}, outcomes[1].Conflict)

		_, err = turns.AppendMany(f.ctx, []eventstore.StreamAppend{{Stream: d, Expected: eventstore.NoStream, Events: []any{Opened{}}}})
		require.ErrorIs(t, err, eventstore.ErrInvalidArgument, "d was not asked for")
		require.ErrorContains(t, err, `"`+d+`"`)
		require.NoError(t, tx.Commit())

		f.requireVersion(t, a, 4)
		f.requireVersion(t, b, 1)
		f.requireVersion(t, c, 0)
		got, err := f.store.Load(f.ctx, a, 0)
		require.NoError(t, err)
		require.Equal(t, []any{Opened{Owner: "A"}, Deposited{Amount: 1}, Deposited{Amount: 2}, Withdrawn{Amount: 1}}, events(got))
	})
}

// Turns leave out the streams another transaction is appending to; a
// version taken by a writer that takes no turn fails the append instead
// of overwriting or skipping it. Both only happen on PostgreSQL: SQLite's
// immediate transaction holds every turn, and no other writer gets in.
func TestTurnsLeaveOutBusyStreamsAndCatchWritersWithoutTurns(t *testing.T) {
	t.Parallel()
	a, b := t.Name()+"/a", t.Name()+"/b"
	f := setup(t, sqldbtest.Backend{Name: "postgres", Open: sqldbtest.Postgres}) // skips without PASSAGE_TEST_POSTGRES
	second := f.secondStore(t)
	_, err := f.store.Append(f.ctx, b, eventstore.NoStream, Opened{Owner: "B"})
	require.NoError(t, err)

	other, err := sqldb.Open(f.ctx, f.dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close() })
	appending, err := other.BeginTxx(f.ctx, nil)
	require.NoError(t, err)
	defer func() { _ = appending.Rollback() }()
	_, err = second.AppendTx(f.ctx, appending, a, eventstore.NoStream, Opened{Owner: "A"})
	require.NoError(t, err)

	tx, err := f.db.BeginTxx(f.ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	turns, err := f.store.TakeTurnsTx(f.ctx, tx, []string{a, b})
	require.NoError(t, err)
	require.Equal(t, []string{a}, turns.Busy())
	_, err = turns.AppendMany(f.ctx, []eventstore.StreamAppend{{Stream: a, Expected: eventstore.NoStream, Events: []any{Opened{}}}})
	require.ErrorIs(t, err, eventstore.ErrInvalidArgument, "a's turn is the other transaction's")
	require.NoError(t, appending.Commit())

	// b's version 2, taken behind the turns' back after they loaded b.
	_, err = other.ExecContext(f.ctx, `INSERT INTO eventstore_events (stream, version, type, data, recorded_at) VALUES ($1, 2, 'account.deposited', '{"Amount": 7}', 0)`, b)
	require.NoError(t, err)
	_, err = turns.AppendMany(f.ctx, []eventstore.StreamAppend{{Stream: b, Expected: eventstore.Exact(1), Events: []any{Deposited{Amount: 1}}}})
	require.ErrorIs(t, err, eventstore.ErrWrongExpectedVersion)
	require.NoError(t, tx.Rollback())
	f.requireVersion(t, b, 2)
}
