package eventstore_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/eventstore"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// withdraw is the account's decision: refuse an overdraft, and do nothing
// for a zero amount.
func withdraw(amount int) func(int) ([]any, error) {
	return func(balance int) ([]any, error) {
		switch {
		case amount == 0:
			return nil, nil
		case amount > balance:
			return nil, errOverdraft
		}
		return []any{Withdrawn{Amount: amount}}, nil
	}
}

func TestUpdate(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		f := setup(t, backend)
		const stream = "account-1"

		res, err := eventstore.Update(f.ctx, f.store, stream, 0, balance,
			func(int) ([]any, error) { return []any{Opened{Owner: "Ada"}, Deposited{Amount: 100}}, nil })
		require.NoError(t, err)
		require.Equal(t, 100, res.State, "the state includes the appended events")
		require.Equal(t, int64(2), res.Version)
		require.Len(t, res.Recorded, 2)
		require.Equal(t, 1, res.Attempts)

		res, err = eventstore.Update(f.ctx, f.store, stream, 0, balance, withdraw(30))
		require.NoError(t, err)
		require.Equal(t, eventstore.UpdateResult[int]{State: 70, Version: 3, Recorded: res.Recorded, Attempts: 1}, res)

		res, err = eventstore.Update(f.ctx, f.store, stream, 0, balance, withdraw(0))
		require.NoError(t, err, "deciding nothing is not an error")
		require.Equal(t, eventstore.UpdateResult[int]{State: 70, Version: 3, Attempts: 1}, res)

		_, err = eventstore.Update(f.ctx, f.store, stream, 0, balance, withdraw(1000))
		require.ErrorIs(t, err, errOverdraft, "the decision's error is returned as is")

		state, version, err := eventstore.Get(f.ctx, f.store, stream, 0, balance)
		require.NoError(t, err)
		require.Equal(t, 70, state)
		require.Equal(t, int64(3), version, "neither deciding nothing nor an error appended anything")
		require.Len(t, f.pub.published(), 3)
	})
}

// racingDecision withdraws amount, but the first time it is asked, another
// writer deposits first: the decision was taken on a stale state.
func racingDecision(t *testing.T, f fixture, stream string, amount int) func(int) ([]any, error) {
	raced := false
	return func(balance int) ([]any, error) {
		if !raced {
			raced = true
			_, err := f.store.Append(f.ctx, stream, eventstore.Any, Deposited{Amount: 1})
			require.NoError(t, err)
		}
		return withdraw(amount)(balance)
	}
}

func TestUpdateRetriesOnConflict(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		f := setup(t, backend)
		const stream = "account-1"
		_, err := f.store.Append(f.ctx, stream, eventstore.NoStream, Deposited{Amount: 100})
		require.NoError(t, err)

		_, err = eventstore.Update(f.ctx, f.store, stream, 0, balance, racingDecision(t, f, stream, 10))
		var conflict *eventstore.VersionConflictError
		require.ErrorAs(t, err, &conflict, "without retries the first conflict is returned")
		require.Equal(t, eventstore.VersionConflictError{Stream: stream, Expected: eventstore.Exact(1), Actual: 2}, *conflict)

		res, err := eventstore.Update(f.ctx, f.store, stream, 0, balance, racingDecision(t, f, stream, 10), eventstore.WithRetries(1))
		require.NoError(t, err)
		require.Equal(t, 2, res.Attempts)
		require.Equal(t, 100+1+1-10, res.State, "the retry decided on the fresh state")
		require.Equal(t, int64(4), res.Version)

		alwaysRaced := func(balance int) ([]any, error) {
			_, err := f.store.Append(f.ctx, stream, eventstore.Any, Deposited{Amount: 1})
			require.NoError(t, err)
			return withdraw(10)(balance)
		}
		res, err = eventstore.Update(f.ctx, f.store, stream, 0, balance, alwaysRaced, eventstore.WithRetries(2))
		require.ErrorIs(t, err, eventstore.ErrWrongExpectedVersion)
		require.ErrorContains(t, err, "gave up after 3 attempts")
		require.Equal(t, 3, res.Attempts, "retries are bounded")
	})
}

func TestUpdateRejectsNegativeRetries(t *testing.T) {
	t.Parallel()
	f := setup(t, sqldbtest.Backends()[0])
	_, err := eventstore.Update(f.ctx, f.store, "s", 0, balance, withdraw(0), eventstore.WithRetries(-1))
	require.ErrorIs(t, err, eventstore.ErrInvalidArgument)
}
