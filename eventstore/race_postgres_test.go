package eventstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/eventstore"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// On PostgreSQL two transactions can both pass the version check (neither
// sees the other's uncommitted event); the unique (stream, version) index
// then makes the second wait for the first and fail when it commits. The
// loser gets the same conflict as from the check, with the winner's version.
func TestPostgresRaceDecidedByTheConstraint(t *testing.T) {
	t.Parallel()
	db, dsn := sqldbtest.Postgres(t) // skips without PASSAGE_TEST_POSTGRES
	ctx := context.Background()
	registry := newRegistry(t)
	first, err := eventstore.Open(ctx, db.DB, registry)
	require.NoError(t, err)

	// One connection, so its backend pid is the one the append will use.
	other, err := sqldb.Open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close() })
	other.SetMaxOpenConns(1)
	var pid int
	require.NoError(t, other.GetContext(ctx, &pid, `SELECT pg_backend_pid()`))
	second, err := eventstore.Open(ctx, other.DB, registry)
	require.NoError(t, err)

	tx, err := db.BeginTxx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	_, err = first.AppendTx(ctx, tx, "account-1", eventstore.NoStream, Opened{Owner: "Ada"})
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() {
		_, err := second.Append(ctx, "account-1", eventstore.NoStream, Opened{Owner: "Bob"})
		done <- err
	}()
	// Wait until the second appender passed its check and is blocked on
	// the index entry the first transaction holds.
	require.Eventually(t, func() bool {
		var waiting string
		err := db.GetContext(ctx, &waiting, `SELECT COALESCE(wait_event_type, '') FROM pg_stat_activity WHERE pid = $1`, pid)
		return err == nil && waiting == "Lock"
	}, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, tx.Commit())

	err = <-done
	var conflict *eventstore.VersionConflictError
	require.ErrorAs(t, err, &conflict)
	require.Equal(t, eventstore.VersionConflictError{Stream: "account-1", Expected: eventstore.NoStream, Actual: 1}, *conflict)
	loaded, err := first.Load(ctx, "account-1", 0)
	require.NoError(t, err)
	require.Equal(t, []any{Opened{Owner: "Ada"}}, events(loaded))
}
