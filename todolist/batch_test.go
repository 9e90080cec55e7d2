package todolist_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/tick"
	"github.com/passage-of-time/passage/todolist"
)

func newBatchProcessor(t *testing.T, l *todolist.List, clock clockwork.Clock, action todolist.BatchAction, opts ...todolist.ProcessorOption) *todolist.Processor {
	t.Helper()
	p, err := todolist.NewBatchProcessor(l, action, append([]todolist.ProcessorOption{todolist.WithClock(clock)}, opts...)...)
	require.NoError(t, err)
	return p
}

// perItem makes a batch action of an action, item by item.
func perItem(action todolist.Action) todolist.BatchAction {
	return func(ctx context.Context, items []todolist.Item) ([]error, error) {
		out := make([]error, len(items))
		for i, it := range items {
			out[i] = action(ctx, it)
		}
		return out, nil
	}
}

func TestNewBatchProcessorRejectsBadInput(t *testing.T) {
	t.Parallel()
	db, _ := sqldbtest.SQLite(t)
	l := openList(t, db, "orders")
	_, err := todolist.NewBatchProcessor(nil, perItem(succeed))
	require.ErrorIs(t, err, todolist.ErrNilList)
	_, err = todolist.HandleBatch[tick.MinuteHasPassed](l, nil)
	require.ErrorIs(t, err, todolist.ErrNilAction)
	_, err = todolist.NewBatchProcessor(l, perItem(succeed), todolist.WithBatchSize(0))
	require.ErrorIs(t, err, todolist.ErrInvalidOption)
}

// The outcomes a batch action returns mean what an action's errors mean,
// item by item: the same results, totals and observer calls as
// TestTotalsCountWhatProcessorsDid, each batch decided in one call.
func TestABatchActionsOutcomesAreThoseOfAnAction(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		l := openList(t, db, "orders")
		// Due one after the other: items due at once are claimed in no
		// particular order.
		for i, id := range []string{"ok-5", "bad", "busy", "gone", "ok-1", "ok-2", "ok-3", "ok-4"} {
			addItems(t, l, t0.Add(time.Duration(i-8)*time.Second), id)
		}
		clock := clockwork.NewFakeClockAt(t0)
		var batches [][]string
		var observed []string
		observe := func(what string) func(string, todolist.Item, error) {
			return func(_ string, it todolist.Item, err error) {
				observed = append(observed, fmt.Sprintf("%s %s %d %v", what, it.ID, it.Attempts, err))
			}
		}
		p := newBatchProcessor(t, l, clock, func(ctx context.Context, items []todolist.Item) ([]error, error) {
			batches = append(batches, ids(items))
			out := make([]error, len(items))
			for i, it := range items {
				switch it.ID {
				case "bad":
					out[i] = fmt.Errorf("cancel %s: %w", it.ID, errFailed)
				case "busy":
					out[i] = errors.Join(errFailed, fmt.Errorf("append: %w", conflictError{}))
				case "gone":
					out[i] = l.Remove(ctx, it.ID)
				}
			}
			return out, nil
		},
			todolist.WithBatchSize(3),
			todolist.WithMaxAttempts(2),
			todolist.WithBackoff(time.Minute, time.Minute),
			todolist.WithObserver(todolist.Observer{
				Done:   func(_ string, it todolist.Item) { observed = append(observed, "done "+it.ID) },
				Failed: observe("failed"),
				Parked: observe("parked"),
			}))

		r, err := p.Process(ctx, t0)
		require.NoError(t, err)
		require.Equal(t, todolist.Result{Cutoff: t0, Claimed: 8, Done: 6, Failed: 1, Conflicts: 1, Lost: 1}, r)
		require.Equal(t, [][]string{{"ok-5", "bad", "busy"}, {"gone", "ok-1", "ok-2"}, {"ok-3", "ok-4"}}, batches,
			"a call per claimed batch, earliest due first, then by ID")
		require.Equal(t, []string{
			"done ok-5", "failed bad 1 cancel bad: payment service unavailable",
			"done gone", "done ok-1", "done ok-2", "done ok-3", "done ok-4",
		}, observed)
		stats, err := l.Stats(ctx, t0)
		require.NoError(t, err)
		require.Equal(t, todolist.Stats{Pending: 2, Due: 2, OldestDue: t0.Add(-7 * time.Second), Completed: 6, Failures: 1}, stats)
		busy, err := l.Get(ctx, "busy")
		require.NoError(t, err)
		require.Zero(t, busy.Attempts, "a conflict counts no attempt")
		require.Equal(t, t0.Add(time.Nanosecond), busy.NextAttempt, "and is taken by the next tick")

		clock.Advance(time.Minute)
		batches, observed = nil, nil
		r, err = p.Process(ctx, clock.Now())
		require.NoError(t, err)
		require.Equal(t, todolist.Result{Cutoff: clock.Now(), Claimed: 2, Parked: 1, Conflicts: 1}, r)
		require.Equal(t, [][]string{{"bad", "busy"}}, batches)
		require.Equal(t, []string{"parked bad 2 cancel bad: payment service unavailable"}, observed)
		parked, err := l.Parked(ctx, 10)
		require.NoError(t, err)
		require.Equal(t, []string{"bad"}, ids(parked))
	})
}

// A batch action that panics, returns a slice of the wrong length or an
// error of its own fails every item of its batch; an error of its own that
// holds a conflict makes every item a conflict.
func TestABatchActionsOwnFailureIsEveryItems(t *testing.T) {
	t.Parallel()
	errCommit := errors.New("commit: connection reset")
	for name, c := range map[string]struct {
		action todolist.BatchAction
		is     error
		text   string
	}{
		"panic": {
			action: func(context.Context, []todolist.Item) ([]error, error) { panic("boom") },
			is:     todolist.ErrActionPanicked, text: "boom",
		},
		"short": {
			action: func(context.Context, []todolist.Item) ([]error, error) { return []error{nil}, nil },
			is:     todolist.ErrBatchOutcomes, text: "1 for a batch of 3 items",
		},
		"long": {
			action: func(_ context.Context, items []todolist.Item) ([]error, error) {
				return make([]error, len(items)+1), nil
			},
			is: todolist.ErrBatchOutcomes, text: "4 for a batch of 3 items",
		},
		"error": {
			action: func(_ context.Context, items []todolist.Item) ([]error, error) {
				return make([]error, len(items)), errCommit
			},
			is: errCommit, text: errCommit.Error(),
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
				ctx := context.Background()
				l := openList(t, db, "orders")
				addItems(t, l, t0, "a", "b", "c")
				var failed []error
				p := newBatchProcessor(t, l, clockwork.NewFakeClockAt(t0), c.action,
					todolist.WithObserver(todolist.Observer{Failed: func(_ string, _ todolist.Item, err error) { failed = append(failed, err) }}))
				r, err := p.Process(ctx, t0)
				require.NoError(t, err)
				require.Equal(t, todolist.Result{Cutoff: t0, Claimed: 3, Failed: 3}, r)
				require.Len(t, failed, 3)
				for _, err := range failed {
					require.ErrorIs(t, err, c.is)
					require.ErrorContains(t, err, c.text)
				}
				for _, id := range []string{"a", "b", "c"} {
					it, err := l.Get(ctx, id)
					require.NoError(t, err)
					require.Equal(t, 1, it.Attempts, id)
				}
			})
		})
	}

	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		l := openList(t, db, "orders")
		addItems(t, l, t0, "a", "b")
		p := newBatchProcessor(t, l, clockwork.NewFakeClockAt(t0), func(context.Context, []todolist.Item) ([]error, error) {
			return nil, fmt.Errorf("append: %w", conflictError{})
		})
		r, err := p.Process(ctx, t0)
		require.NoError(t, err)
		require.Equal(t, todolist.Result{Cutoff: t0, Claimed: 2, Conflicts: 2}, r)
	})
}

// The ctx a batch action gets completes any item of its batch that it
// removes — one by one, or set-wise through a projection — in the
// removal's transaction; it completes no other item.
func TestABatchActionsRemovalsCompleteItsItems(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		l := openList(t, db, "pending-orders")
		proj := pendingOrders(l)
		addItems(t, l, t0, "o1", "o2", "o3", "o4", "o5")
		addItems(t, l, t0.Add(time.Hour), "later")
		var rolledBack bool
		p := newBatchProcessor(t, l, clockwork.NewFakeClockAt(t0), func(ctx context.Context, items []todolist.Item) ([]error, error) {
			// A transaction that rolls back completes nothing.
			tx, err := db.BeginTxx(ctx, nil)
			require.NoError(t, err)
			require.NoError(t, proj.Apply(ctx, tx, orderCancelled{"o1"}, orderCancelled{"o2"}))
			require.NoError(t, tx.Rollback())
			rolledBack = true

			tx, err = db.BeginTxx(ctx, nil)
			require.NoError(t, err)
			require.NoError(t, proj.Apply(ctx, tx,
				orderCancelled{"o1"}, orderCompleted{"o2"}, orderCancelled{"later"}, orderCancelled{"o3"}))
			require.NoError(t, l.RemoveTx(ctx, tx, "o4"))
			require.NoError(t, tx.Commit())
			return make([]error, len(items)), nil
		}, todolist.WithBatchSize(4))

		r, err := p.Process(ctx, t0)
		require.NoError(t, err)
		require.True(t, rolledBack)
		require.Equal(t, todolist.Result{Cutoff: t0, Claimed: 5, Done: 5, Lost: 4}, r,
			"the batch action removed the first batch's items itself")
		stats, err := l.Stats(ctx, t0)
		require.NoError(t, err)
		require.Equal(t, todolist.Stats{Completed: 5}, stats,
			"o1–o4 by their removal, o5 by the end of its batch; later is no item of a batch: removed, not completed")
	})
}

// A batch action running longer than the lease keeps its batch: the
// keeper renews it meanwhile, so another processor takes nothing and the
// outcomes are written.
func TestTheLeaseIsRenewedWhileABatchActionRuns(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		clock := clockwork.NewFakeClockAt(t0)
		l := openList(t, db, "orders", todolist.WithListClock(clock))
		addItems(t, l, t0, "a", "b")
		other := newProcessor(t, l, clock, succeed)
		var calls int
		first := newBatchProcessor(t, l, clock, func(ctx context.Context, items []todolist.Item) ([]error, error) {
			calls++
			for range 5 {
				require.NoError(t, clock.BlockUntilContext(ctx, 1), "the renewal waits for its time")
				clock.Advance(20 * time.Second)
			}
			require.NoError(t, clock.BlockUntilContext(ctx, 1), "the last renewal is done")
			r, err := other.Process(ctx, clock.Now())
			require.NoError(t, err)
			require.Zero(t, r.Claimed, "the renewed claim holds the batch")
			return make([]error, len(items)), nil
		}, todolist.WithLease(time.Minute))

		r, err := first.Process(ctx, t0)
		require.NoError(t, err)
		require.Equal(t, todolist.Result{Cutoff: t0, Claimed: 2, Done: 2}, r)
		require.Equal(t, 1, calls)
		stats, err := l.Stats(ctx, clock.Now())
		require.NoError(t, err)
		require.Equal(t, todolist.Stats{Completed: 2}, stats)
	})
}

// A batch action that outlives its lease (the process stalled) writes no
// outcome: another processor took the items, and each is completed and
// failed once, by that one.
func TestABatchThatLostItsLeaseWritesNothing(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		clock := clockwork.NewFakeClockAt(t0)
		l := openList(t, db, "orders", todolist.WithListClock(clock))
		addItems(t, l, t0, "a", "b", "bad")
		other := newProcessor(t, l, clock, func(_ context.Context, it todolist.Item) error {
			if it.ID == "bad" {
				return errFailed
			}
			return nil
		}, todolist.WithLease(time.Minute))
		var lost []error
		first := newBatchProcessor(t, l, clock, func(ctx context.Context, items []todolist.Item) ([]error, error) {
			clock.Advance(2 * time.Minute)
			r, err := other.Process(ctx, clock.Now())
			require.NoError(t, err)
			require.Equal(t, 2, r.Done, "the lapsed claim let the other processor take the items")
			return []error{nil, nil, errFailed}, nil
		}, todolist.WithLease(time.Minute),
			todolist.WithObserver(todolist.Observer{LeaseLost: func(_ string, err error) { lost = append(lost, err) }}))

		r, err := first.Process(ctx, t0)
		require.NoError(t, err)
		require.Equal(t, todolist.Result{Cutoff: t0, Claimed: 3, Done: 2, Lost: 3, LeasesLost: 1}, r)
		require.Len(t, lost, 1)
		require.ErrorIs(t, lost[0], todolist.ErrLeaseLost)
		stats, err := l.Stats(ctx, clock.Now())
		require.NoError(t, err)
		require.Equal(t, todolist.Stats{Pending: 1, Due: 1, OldestDue: t0, Completed: 2, Failures: 1}, stats)
		bad, err := l.Get(ctx, "bad")
		require.NoError(t, err)
		require.Equal(t, 1, bad.Attempts, "the failure was recorded once, by the processor holding the item")
	})
}

// Two batch processors on one list at once decide every item exactly once.
func TestTwoBatchProcessorsDecideEveryItemOnce(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, dsn string) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		l1, l2 := openTwice(t, ctx, db, dsn, "orders")
		const n = 200
		for i := range n {
			addItems(t, l1, t0, fmt.Sprintf("item-%03d", i))
		}
		var mu sync.Mutex
		runs := map[string]int{}
		meet := rendezvous(2)
		clock := clockwork.NewFakeClockAt(t0)
		var wg sync.WaitGroup
		results := make([]todolist.Result, 2)
		errs := make([]error, 2)
		for i, l := range []*todolist.List{l1, l2} {
			p := newBatchProcessor(t, l, clock, func(ctx context.Context, items []todolist.Item) ([]error, error) {
				meet[i](ctx)
				mu.Lock()
				defer mu.Unlock()
				for _, it := range items {
					runs[it.ID]++
				}
				return make([]error, len(items)), nil
			}, todolist.WithBatchSize(7))
			wg.Go(func() { results[i], errs[i] = p.Process(ctx, t0) })
		}
		wg.Wait()
		require.NoError(t, errors.Join(errs...))
		require.Len(t, runs, n)
		for id, k := range runs {
			require.Equal(t, 1, k, id)
		}
		require.Equal(t, n, results[0].Done+results[1].Done)
		stats, err := l1.Stats(ctx, t0)
		require.NoError(t, err)
		require.Equal(t, todolist.Stats{Completed: n}, stats)
	})
}
