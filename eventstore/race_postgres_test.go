package eventstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/eventstore"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// contender is a second PostgreSQL handle with a single connection, so the
// test knows the backend pid its appends run on and can see them wait.
type contender struct {
	ctx   context.Context
	db    *sqldb.DB // the first handle, which holds the stream
	other *sqldb.DB
	pid   int
	first *eventstore.Store
	store *eventstore.Store
}

func setupContender(t *testing.T) contender {
	t.Helper()
	db, dsn := sqldbtest.Postgres(t) // skips without PASSAGE_TEST_POSTGRES
	c := contender{ctx: context.Background(), db: db}
	registry := newRegistry(t)
	var err error
	c.first, err = eventstore.Open(c.ctx, db.DB, registry)
	require.NoError(t, err)
	c.other, err = sqldb.Open(c.ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.other.Close() })
	c.other.SetMaxOpenConns(1)
	require.NoError(t, c.other.GetContext(c.ctx, &c.pid, `SELECT pg_backend_pid()`))
	c.store, err = eventstore.Open(c.ctx, c.other.DB, registry)
	require.NoError(t, err)
	return c
}

// race runs contend on the contender while holder's transaction holds the
// stream, waits until contend blocks on waitEvent (pg_stat_activity), then
// commits holder and returns contend's error.
func (c contender) race(t *testing.T, holder *sqlx.Tx, waitEvent string, contend func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- contend() }()
	require.Eventually(t, func() bool {
		var waiting string
		err := c.db.GetContext(c.ctx, &waiting, `SELECT COALESCE(wait_event, '') FROM pg_stat_activity WHERE pid = $1`, c.pid)
		return err == nil && waiting == waitEvent
	}, 10*time.Second, 5*time.Millisecond, "the contender never waited on %s", waitEvent)
	require.NoError(t, holder.Commit())
	return <-done
}

// Two callers' transactions appending to one stream with Any take turns:
// the second waits for the first to end, then appends after its event,
// inside its own transaction, where a lost race could not be retried.
func TestPostgresAppendTxTakesTheStreamsTurn(t *testing.T) {
	t.Parallel()
	c := setupContender(t)
	holder, err := c.db.BeginTxx(c.ctx, nil)
	require.NoError(t, err)
	defer func() { _ = holder.Rollback() }()
	_, err = c.first.AppendTx(c.ctx, holder, "account-1", eventstore.Any, Opened{Owner: "Ada"})
	require.NoError(t, err)

	var res eventstore.AppendResult
	err = c.race(t, holder, "advisory", func() error {
		tx, err := c.other.BeginTxx(c.ctx, nil)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		if res, err = c.store.AppendTx(c.ctx, tx, "account-1", eventstore.Any, Opened{Owner: "Bob"}); err != nil {
			return err
		}
		return tx.Commit()
	})
	require.NoError(t, err)
	require.Equal(t, int64(2), res.Version)

	// An exact expectation that the first transaction broke is a conflict
	// found by the version check, with the version found.
	holder, err = c.db.BeginTxx(c.ctx, nil)
	require.NoError(t, err)
	defer func() { _ = holder.Rollback() }()
	_, err = c.first.AppendTx(c.ctx, holder, "account-1", eventstore.Exact(2), Deposited{Amount: 1})
	require.NoError(t, err)
	err = c.race(t, holder, "advisory", func() error {
		_, err := c.store.Append(c.ctx, "account-1", eventstore.Exact(2), Deposited{Amount: 2})
		return err
	})
	var conflict *eventstore.VersionConflictError
	require.ErrorAs(t, err, &conflict)
	require.Equal(t, eventstore.VersionConflictError{Stream: "account-1", Expected: eventstore.Exact(2), Actual: 3}, *conflict)

	loaded, err := c.first.Load(c.ctx, "account-1", 0)
	require.NoError(t, err)
	require.Equal(t, []any{Opened{Owner: "Ada"}, Opened{Owner: "Bob"}, Deposited{Amount: 1}}, events(loaded))
}

// A writer that does not take turns (here a raw INSERT; also a transaction
// reading from an older snapshot) can still pass the version check
// concurrently. The unique (stream, version) constraint then decides: an
// exact expectation loses with the winner's version, and Append starts an
// Any append over after the winner's event.
func TestPostgresConstraintDecidesForWritersOutOfTurn(t *testing.T) {
	t.Parallel()
	c := setupContender(t)
	insertOutOfTurn := func(stream string) *sqlx.Tx {
		tx, err := c.db.BeginTxx(c.ctx, nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = tx.Rollback() })
		_, err = tx.ExecContext(c.ctx, `INSERT INTO eventstore_events (stream, version, type, data, recorded_at) VALUES ($1, 1, 'account.opened', '{"Owner":"Eve"}', 0)`, stream)
		require.NoError(t, err)
		return tx
	}

	err := c.race(t, insertOutOfTurn("account-exact"), "transactionid", func() error {
		_, err := c.store.Append(c.ctx, "account-exact", eventstore.NoStream, Opened{Owner: "Bob"})
		return err
	})
	var conflict *eventstore.VersionConflictError
	require.ErrorAs(t, err, &conflict)
	require.Equal(t, eventstore.VersionConflictError{Stream: "account-exact", Expected: eventstore.NoStream, Actual: 1}, *conflict)

	var res eventstore.AppendResult
	err = c.race(t, insertOutOfTurn("account-any"), "transactionid", func() error {
		var err error
		res, err = c.store.Append(c.ctx, "account-any", eventstore.Any, Opened{Owner: "Bob"})
		return err
	})
	require.NoError(t, err)
	require.Equal(t, int64(2), res.Version)

	for stream, want := range map[string][]any{
		"account-exact": {Opened{Owner: "Eve"}},
		"account-any":   {Opened{Owner: "Eve"}, Opened{Owner: "Bob"}},
	} {
		loaded, err := c.first.Load(c.ctx, stream, 0)
		require.NoError(t, err)
		require.Equal(t, want, events(loaded), stream)
	}
}
