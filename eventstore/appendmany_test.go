package eventstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/eventstore"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// hookLog records, per call of an in-transaction hook, the stream and
// versions it was given.
type hookLog struct {
	mu    sync.Mutex
	calls []string
}

func (h *hookLog) hook(_ context.Context, _ sqlx.ExtContext, recorded []eventstore.Recorded) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	call := recorded[0].Stream
	for _, r := range recorded {
		call += fmt.Sprintf(" %s@%d", r.Stream, r.Version)
	}
	h.calls = append(h.calls, call)
	return nil
}

func (h *hookLog) seen() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.calls...)
}

func (f fixture) requireVersion(t *testing.T, stream string, want int64) {
	t.Helper()
	v, err := f.store.Version(f.ctx, stream)
	require.NoError(t, err)
	require.Equal(t, want, v, "version of %q", stream)
}

// TestAppendManyCommitsAllButTheConflicts: a batch mixing every expected
// version, some of which do not hold, appends the others in one go; the
// conflicts report where their streams are and store nothing; the hooks
// see, and the publisher gets, exactly the appended events in batch
// order.
func TestAppendManyCommitsAllButTheConflicts(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		hooks := &hookLog{}
		f := setup(t, backend, eventstore.WithInTransaction(hooks.hook))
		_, err := f.store.Append(f.ctx, "a", eventstore.NoStream, Opened{Owner: "A"})
		require.NoError(t, err)
		_, err = f.store.Append(f.ctx, "b", eventstore.NoStream, Opened{Owner: "B"}, Deposited{Amount: 1})
		require.NoError(t, err)
		before := len(f.pub.published())
		hooks.calls = nil

		outcomes, err := f.store.AppendMany(f.ctx, []eventstore.StreamAppend{
			{Stream: "a", Expected: eventstore.Exact(1), Events: []any{Deposited{Amount: 10}, Deposited{Amount: 11}}},
			{Stream: "b", Expected: eventstore.Exact(1), Events: []any{Withdrawn{Amount: 1}}},
			{Stream: "c", Expected: eventstore.NoStream, Events: []any{Opened{Owner: "C"}}},
			{Stream: "d", Expected: eventstore.StreamExists, Events: []any{Deposited{Amount: 4}}},
			{Stream: "e", Expected: eventstore.Any, Events: []any{Opened{Owner: "E"}}},
			{Stream: "b", Expected: eventstore.Exact(2)},
			{Stream: "f", Expected: eventstore.StreamExists},
		})
		require.NoError(t, err)
		require.Len(t, outcomes, 7)

		var appended [][]eventstore.Recorded
		for i, want := range []int64{3, 0, 1, 0, 1, 2, 0} {
			o := outcomes[i]
			switch i {
			case 1, 3, 6:
				require.ErrorIs(t, o.Err(), eventstore.ErrWrongExpectedVersion, "entry %d", i)
				require.Zero(t, o.Result)
			default:
				require.NoError(t, o.Err(), "entry %d", i)
				require.Equal(t, want, o.Result.Version, "entry %d", i)
				if len(o.Result.Recorded) > 0 {
					loaded, err := f.store.Load(f.ctx, o.Result.Recorded[0].Stream, o.Result.Recorded[0].Version)
					require.NoError(t, err)
					require.Equal(t, o.Result.Recorded, loaded, "entry %d: the result is what is stored, positions included", i)
					appended = append(appended, o.Result.Recorded)
				}
			}
		}
		require.Equal(t, &eventstore.VersionConflictError{Stream: "b", Expected: eventstore.Exact(1), Actual: 2}, outcomes[1].Conflict)
		require.Equal(t, &eventstore.VersionConflictError{Stream: "d", Expected: eventstore.StreamExists, Actual: 0}, outcomes[3].Conflict)
		require.Equal(t, &eventstore.VersionConflictError{Stream: "f", Expected: eventstore.StreamExists, Actual: 0}, outcomes[6].Conflict)

		f.requireVersion(t, "a", 3)
		f.requireVersion(t, "b", 2)
		f.requireVersion(t, "c", 1)
		f.requireVersion(t, "d", 0)
		f.requireVersion(t, "e", 1)
		require.Equal(t, []string{"a a@2 a@3", "c c@1", "e e@1"}, hooks.seen(), "one hook call per appended entry, its events only")
		var want []any
		for _, recorded := range appended {
			want = append(want, events(recorded)...)
		}
		require.Equal(t, want, f.pub.published()[before:], "the appended events are published in batch order")
	})
}

// TestAppendManyOfOneStreamIsSequential: entries of one stream apply in
// order, each checked against what the ones before it left.
func TestAppendManyOfOneStreamIsSequential(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		f := setup(t, backend)
		outcomes, err := f.store.AppendMany(f.ctx, []eventstore.StreamAppend{
			{Stream: "a", Expected: eventstore.NoStream, Events: []any{Opened{Owner: "A"}}},
			{Stream: "a", Expected: eventstore.Exact(1), Events: []any{Deposited{Amount: 1}}},
			{Stream: "a", Expected: eventstore.Exact(1), Events: []any{Deposited{Amount: 2}}},
			{Stream: "a", Expected: eventstore.Any, Events: []any{Deposited{Amount: 3}}},
			{Stream: "a", Expected: eventstore.NoStream},
		})
		require.NoError(t, err)
		require.Equal(t, int64(1), outcomes[0].Result.Version)
		require.Equal(t, int64(2), outcomes[1].Result.Version)
		require.Equal(t, &eventstore.VersionConflictError{Stream: "a", Expected: eventstore.Exact(1), Actual: 2}, outcomes[2].Conflict)
		require.Equal(t, int64(3), outcomes[3].Result.Version)
		require.Equal(t, &eventstore.VersionConflictError{Stream: "a", Expected: eventstore.NoStream, Actual: 3}, outcomes[4].Conflict)
		loaded, err := f.store.Load(f.ctx, "a", 0)
		require.NoError(t, err)
		require.Equal(t, []any{Opened{Owner: "A"}, Deposited{Amount: 1}, Deposited{Amount: 3}}, events(loaded))
	})
}

// poison makes every insert of stream "poison" fail in the database: a
// storage failure in the middle of a batch.
func poison(t *testing.T, f fixture) {
	t.Helper()
	stmts := []string{`CREATE TRIGGER poison BEFORE INSERT ON eventstore_events
FOR EACH ROW WHEN (NEW.stream = 'poison') BEGIN SELECT RAISE(ABORT, 'poisoned stream'); END`}
	if f.db.IsPostgres() {
		stmts = []string{`CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'poisoned stream'; END $$`,
			`CREATE TRIGGER poison BEFORE INSERT ON eventstore_events
FOR EACH ROW WHEN (NEW.stream = 'poison') EXECUTE FUNCTION poison()`}
	}
	for _, stmt := range stmts {
		_, err := f.db.ExecContext(f.ctx, stmt)
		require.NoError(t, err)
	}
}

// TestAppendManyFailsAsAWhole: a storage failure or a hook's error on one
// entry stores nothing of any, publishes nothing and runs no projection.
func TestAppendManyFailsAsAWhole(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		f := setupWithProjection(t, backend)
		poison(t, f)
		_, err := f.store.AppendMany(f.ctx, []eventstore.StreamAppend{
			{Stream: "account-ada", Expected: eventstore.NoStream, Events: []any{Opened{Owner: "Ada"}}},
			{Stream: "poison", Expected: eventstore.Any, Events: []any{Opened{Owner: "P"}}},
		})
		require.ErrorContains(t, err, "poisoned stream")
		require.NotErrorIs(t, err, eventstore.ErrWrongExpectedVersion)

		_, err = f.store.AppendMany(f.ctx, []eventstore.StreamAppend{
			{Stream: "account-ada", Expected: eventstore.NoStream, Events: []any{Opened{Owner: "Ada"}}},
			{Stream: "account-bob", Expected: eventstore.NoStream, Events: []any{Opened{Owner: "Bob"}, Withdrawn{Amount: 500}}},
		})
		require.ErrorIs(t, err, errOverdraft)
		require.ErrorContains(t, err, `entry 1 (stream "account-bob"): in-transaction hook 1`)

		f.requireEmpty(t, "account-ada")
		f.requireEmpty(t, "account-bob")
		f.requireEmpty(t, "poison")
		require.Empty(t, f.owners(t), "the projection rolled back with the batch")
		require.Empty(t, f.pub.published())
	})
}

func TestAppendManyRejectsBadInputBeforeWriting(t *testing.T) {
	t.Parallel()
	f := setup(t, sqldbtest.Backends()[0])
	good := eventstore.StreamAppend{Stream: "a", Expected: eventstore.NoStream, Events: []any{Opened{Owner: "A"}}}

	outcomes, err := f.store.AppendMany(f.ctx, nil)
	require.NoError(t, err)
	require.Empty(t, outcomes, "an empty batch appends nothing")

	for _, bad := range []struct {
		entry eventstore.StreamAppend
		is    error
		says  string
	}{
		{eventstore.StreamAppend{Expected: eventstore.Any}, eventstore.ErrInvalidArgument, "entry 1: stream name must not be empty"},
		{eventstore.StreamAppend{Stream: "b", Expected: eventstore.Exact(-3)}, eventstore.ErrInvalidArgument, `entry 1 (stream "b")`},
		{eventstore.StreamAppend{Stream: "b", Expected: eventstore.Any, Events: []any{Opened{}, struct{}{}}}, eventstore.ErrUnregisteredType, `entry 1 (stream "b"): event 1`},
		{eventstore.StreamAppend{Stream: "b", Expected: eventstore.Any, Events: []any{nil}}, eventstore.ErrInvalidArgument, `entry 1 (stream "b"): event 0`},
	} {
		_, err := f.store.AppendMany(f.ctx, []eventstore.StreamAppend{good, bad.entry})
		require.ErrorIs(t, err, bad.is)
		require.ErrorContains(t, err, bad.says)
	}
	f.requireEmpty(t, "a")

	_, err = f.store.AppendManyTx(f.ctx, nil, []eventstore.StreamAppend{good})
	require.ErrorIs(t, err, eventstore.ErrInvalidArgument)
}

func TestAppendManyTxJoinsTheCallersTransaction(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		f := setupWithProjection(t, backend)
		batch := []eventstore.StreamAppend{
			{Stream: "account-ada", Expected: eventstore.NoStream, Events: []any{Opened{Owner: "Ada"}}},
			{Stream: "account-bob", Expected: eventstore.StreamExists, Events: []any{Opened{Owner: "Bob"}}},
		}

		tx, err := f.db.BeginTxx(f.ctx, nil)
		require.NoError(t, err)
		outcomes, err := f.store.AppendManyTx(f.ctx, tx, batch)
		require.NoError(t, err)
		require.Equal(t, int64(1), outcomes[0].Result.Version)
		require.ErrorIs(t, outcomes[1].Err(), eventstore.ErrWrongExpectedVersion)
		require.NoError(t, tx.Rollback())
		f.requireEmpty(t, "account-ada")
		require.Empty(t, f.owners(t), "the hooks ran in the caller's transaction and rolled back with it")

		tx, err = f.db.BeginTxx(f.ctx, nil)
		require.NoError(t, err)
		outcomes, err = f.store.AppendManyTx(f.ctx, tx, batch)
		require.NoError(t, err)
		require.NoError(t, tx.Commit())
		require.Equal(t, []string{"Ada"}, f.owners(t))
		f.requireVersion(t, "account-ada", 1)
		require.Empty(t, f.pub.published(), "AppendManyTx cannot know about the commit, so it does not publish")
		require.NoError(t, f.store.Publish(f.ctx, outcomes[0].Result.Recorded))
		require.Equal(t, []any{Opened{Owner: "Ada"}}, f.pub.published())
	})
}

func TestAppendManyPublishFailureAfterCommit(t *testing.T) {
	t.Parallel()
	f := setup(t, sqldbtest.Backends()[0])
	busDown := errors.New("bus down")
	f.pub.failWith(busDown)
	outcomes, err := f.store.AppendMany(f.ctx, []eventstore.StreamAppend{
		{Stream: "a", Expected: eventstore.NoStream, Events: []any{Opened{Owner: "A"}}},
		{Stream: "b", Expected: eventstore.NoStream, Events: []any{Opened{Owner: "B"}}},
	})
	require.ErrorIs(t, err, eventstore.ErrPublish, "the caller can tell the batch was committed")
	require.ErrorIs(t, err, busDown)
	require.ErrorContains(t, err, `stream "a"`)
	require.ErrorContains(t, err, `stream "b"`)
	require.Equal(t, int64(1), outcomes[1].Result.Version, "the outcomes are valid alongside the error")
	f.requireVersion(t, "b", 1)
}

// TestConcurrentAppendManyTakeTurns: batches sharing streams, each in its
// own order, run at once from two store handles (two "processes"): none
// deadlocks, and every stream ends with every event, versions without
// gaps.
func TestConcurrentAppendManyTakeTurns(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, backend sqldbtest.Backend) {
		f := setup(t, backend)
		stores := []*eventstore.Store{f.store, f.secondStore(t)}
		const writers, rounds, streams = 4, 5, 20
		var wg sync.WaitGroup
		errs := make([]error, writers)
		for w := range writers {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(w), 7))
				for range rounds {
					batch := make([]eventstore.StreamAppend, streams)
					for i, s := range r.Perm(streams) {
						batch[i] = eventstore.StreamAppend{Stream: fmt.Sprintf("s-%d", s), Expected: eventstore.Any, Events: []any{Deposited{Amount: 1, By: w}}}
					}
					outcomes, err := stores[w%2].AppendMany(f.ctx, batch)
					if err == nil {
						for _, o := range outcomes {
							err = errors.Join(err, o.Err())
						}
					}
					if err != nil {
						errs[w] = err
						return
					}
				}
			})
		}
		wg.Wait()
		require.NoError(t, errors.Join(errs...))
		for s := range streams {
			loaded, err := f.store.Load(f.ctx, fmt.Sprintf("s-%d", s), 0)
			require.NoError(t, err)
			require.Len(t, loaded, writers*rounds)
			for i, r := range loaded {
				require.Equal(t, int64(i+1), r.Version)
			}
		}
	})
}
