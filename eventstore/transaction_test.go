package eventstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/eventstore"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// projectOpenedAccounts is a projection maintained inside the append's
// transaction: one row per opened account.
func projectOpenedAccounts(ctx context.Context, tx sqlx.ExtContext, recorded []eventstore.Recorded) error {
	for _, r := range recorded {
		if e, ok := r.Event.(Opened); ok {
			if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO accounts (stream, owner) VALUES (?, ?)`), r.Stream, e.Owner); err != nil {
				return err
			}
		}
	}
	return nil
}

var errOverdraft = errors.New("overdraft")

// refuseOverdrafts fails the append of a withdrawal above 100.
func refuseOverdrafts(_ context.Context, _ sqlx.ExtContext, recorded []eventstore.Recorded) error {
	for _, r := range recorded {
		if e, ok := r.Event.(Withdrawn); ok && e.Amount > 100 {
			return errOverdraft
		}
	}
	return nil
}

func panicOnZeroDeposit(_ context.Context, _ sqlx.ExtContext, recorded []eventstore.Recorded) error {
	for _, r := range recorded {
		if e, ok := r.Event.(Deposited); ok && e.Amount == 0 {
			panic("zero deposit")
		}
	}
	return nil
}

func setupWithProjection(t *testing.T, backend sqldbtest.Backend) fixture {
	t.Helper()
	f := setup(t, backend,
		eventstore.WithInTransaction(projectOpenedAccounts),
		eventstore.WithInTransaction(refuseOverdrafts),
		eventstore.WithInTransaction(panicOnZeroDeposit))
	_, err := f.db.ExecContext(f.ctx, `CREATE TABLE accounts (stream TEXT PRIMARY KEY, owner TEXT NOT NULL)`)
	require.NoError(t, err)
	return f
}

func (f fixture) owners(t *testing.T) []string {
	t.Helper()
	var owners []string
	require.NoError(t, f.db.SelectContext(f.ctx, &owners, `SELECT owner FROM accounts ORDER BY owner`))
	return owners
}

func (f fixture) requireEmpty(t *testing.T, stream string) {
	t.Helper()
	v, err := f.store.Version(f.ctx, stream)
	require.NoError(t, err)
	require.Zero(t, v, "stream %q has events", stream)
}

func TestInTransactionHooksCommitWithTheEvents(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		f := setupWithProjection(t, backend)

		_, err := f.store.Append(f.ctx, "account-ada", eventstore.NoStream, Opened{Owner: "Ada"}, Deposited{Amount: 50})
		require.NoError(t, err)
		require.Equal(t, []string{"Ada"}, f.owners(t))

		// The projection row is written by the first hook, then the second
		// refuses the batch: neither the events nor the row survive.
		_, err = f.store.Append(f.ctx, "account-bob", eventstore.NoStream, Opened{Owner: "Bob"}, Withdrawn{Amount: 500})
		require.ErrorIs(t, err, errOverdraft)
		require.ErrorContains(t, err, "in-transaction hook 1")
		f.requireEmpty(t, "account-bob")

		_, err = f.store.Append(f.ctx, "account-cy", eventstore.NoStream, Opened{Owner: "Cy"}, Deposited{Amount: 0})
		require.ErrorContains(t, err, "panic: zero deposit", "a panicking hook is an error, not a crash")
		f.requireEmpty(t, "account-cy")

		require.Equal(t, []string{"Ada"}, f.owners(t), "rolled-back appends leave no projection rows")
		require.Equal(t, []any{Opened{Owner: "Ada"}, Deposited{Amount: 50}}, f.pub.published(),
			"only committed events are published")
	})
}

func TestAppendTxJoinsTheCallersTransaction(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		f := setupWithProjection(t, backend)

		tx, err := f.db.BeginTxx(f.ctx, nil)
		require.NoError(t, err)
		res, err := f.store.AppendTx(f.ctx, tx, "account-ada", eventstore.NoStream, Opened{Owner: "Ada"})
		require.NoError(t, err)
		require.Equal(t, int64(1), res.Version)
		require.NoError(t, tx.Rollback())
		f.requireEmpty(t, "account-ada")
		require.Empty(t, f.owners(t), "the hooks ran in the caller's transaction and rolled back with it")

		tx, err = f.db.BeginTxx(f.ctx, nil)
		require.NoError(t, err)
		res, err = f.store.AppendTx(f.ctx, tx, "account-ada", eventstore.NoStream, Opened{Owner: "Ada"})
		require.NoError(t, err)
		require.NoError(t, tx.Commit())
		require.Equal(t, []string{"Ada"}, f.owners(t))
		require.Empty(t, f.pub.published(), "AppendTx cannot know about the commit, so it does not publish")

		require.NoError(t, f.store.Publish(f.ctx, res.Recorded))
		require.Equal(t, []any{Opened{Owner: "Ada"}}, f.pub.published())
	})
}

func TestPublishFailureAfterCommit(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		f := setup(t, backend)
		busDown := errors.New("bus down")
		f.pub.failWith(busDown)

		res, err := f.store.Append(f.ctx, "account-1", eventstore.NoStream, Opened{Owner: "Ada"}, Deposited{Amount: 5})
		require.ErrorIs(t, err, eventstore.ErrPublish, "the caller can tell the append succeeded")
		require.ErrorIs(t, err, busDown)
		require.ErrorContains(t, err, `stream "account-1" versions 1-2`)
		require.Equal(t, int64(2), res.Version, "the result is valid alongside the error")

		loaded, err := f.store.Load(f.ctx, "account-1", 0)
		require.NoError(t, err)
		require.Equal(t, res.Recorded, loaded, "the events are committed")
	})
}

type panickingPublisher struct{}

func (panickingPublisher) Publish(context.Context, ...any) error { panic("subscriber bug") }

func TestPanickingPublisherIsAnError(t *testing.T) {
	t.Parallel()
	f := setup(t, sqldbtest.Backends()[0], eventstore.WithPublisher(panickingPublisher{}))
	res, err := f.store.Append(f.ctx, "account-1", eventstore.NoStream, Opened{Owner: "Ada"})
	require.ErrorIs(t, err, eventstore.ErrPublish)
	require.ErrorContains(t, err, "panic: subscriber bug")
	require.Equal(t, int64(1), res.Version)
	var panicked *eventstore.PanicError
	require.ErrorAs(t, err, &panicked)
	require.Equal(t, "subscriber bug", panicked.Value)
	require.Contains(t, string(panicked.Stack), "panickingPublisher.Publish", "the stack shows where it panicked")
}

// A hook that panics with an error fails the append with an error that
// still matches the hook's error, and the stack of the panic.
func TestPanickingHookKeepsValueAndStack(t *testing.T) {
	t.Parallel()
	f := setup(t, sqldbtest.Backends()[0], eventstore.WithInTransaction(panicWithOverdraft))
	_, err := f.store.Append(f.ctx, "account-1", eventstore.NoStream, Opened{Owner: "Ada"})
	require.ErrorIs(t, err, errOverdraft)
	var panicked *eventstore.PanicError
	require.ErrorAs(t, err, &panicked)
	require.Equal(t, errOverdraft, panicked.Value)
	require.Contains(t, string(panicked.Stack), "panicWithOverdraft")
	f.requireEmpty(t, "account-1")
}

func panicWithOverdraft(context.Context, sqlx.ExtContext, []eventstore.Recorded) error {
	panic(errOverdraft)
}
