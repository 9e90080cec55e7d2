package todolist_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
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

// conflictError stands in for the event store's version conflict: the
// processor recognises it by its Conflict method alone.
type conflictError struct{}

func (conflictError) Error() string  { return "wrong expected version" }
func (conflictError) Conflict() bool { return true }

func TestNewProcessorRejectsBadInput(t *testing.T) {
	t.Parallel()
	db, _ := sqldbtest.SQLite(t)
	l := openList(t, db, "orders")

	_, err := todolist.NewProcessor(nil, succeed)
	require.ErrorIs(t, err, todolist.ErrNilList)
	_, err = todolist.Handle[tick.MinuteHasPassed](l, nil)
	require.ErrorIs(t, err, todolist.ErrNilAction)
	for _, opt := range []todolist.ProcessorOption{
		todolist.WithClock(nil),
		todolist.WithBatchSize(0),
		todolist.WithBatchSize(todolist.MaxBatchSize + 1),
		todolist.WithLease(0),
		todolist.WithMaxAttempts(0),
		todolist.WithBackoff(0, time.Minute),
		todolist.WithBackoff(time.Hour, time.Minute),
		todolist.WithBackoff(time.Minute, todolist.MaxBackoff+time.Nanosecond),
		todolist.WithMaxItems(0),
		todolist.WithTimeBudget(-time.Second),
	} {
		_, err := todolist.NewProcessor(l, succeed, opt)
		require.ErrorIs(t, err, todolist.ErrInvalidOption)
		require.ErrorContains(t, err, `"orders"`)
	}

	p, err := todolist.NewProcessor(l, succeed)
	require.NoError(t, err)
	_, err = p.Process(context.Background(), time.Time{})
	require.ErrorIs(t, err, todolist.ErrInvalidTime)
}

func TestProcessingTakesWhatWasDueAtTheBoundary(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		l := openList(t, db, "orders")
		addItems(t, l, t0.Add(-time.Hour), "yesterday")
		addItems(t, l, t0, "at-boundary")
		addItems(t, l, t0.Add(30*time.Second), "after-boundary")
		addItems(t, l, t0.Add(2*time.Hour), "future")

		clock := clockwork.NewFakeClockAt(t0.Add(40 * time.Second))
		var mu sync.Mutex
		var worked []string
		handler, err := todolist.Handle[tick.MinuteHasPassed](l, func(_ context.Context, it todolist.Item) error {
			mu.Lock()
			defer mu.Unlock()
			worked = append(worked, it.ID)
			return nil
		}, todolist.WithClock(clock))
		require.NoError(t, err)

		// Emitted 40 s late: still only what was due at the boundary.
		require.NoError(t, handler(ctx, tick.MinuteHasPassed{Passage: tick.Passage{At: t0}}))
		require.Equal(t, []string{"yesterday", "at-boundary"}, worked, "earliest due first")
		_, err = l.Get(ctx, "yesterday")
		require.ErrorIs(t, err, todolist.ErrNotFound, "done items are removed")

		// A boundary ahead of the processor's clock is capped by it.
		worked = nil
		day, err := todolist.Handle[tick.Event](l, func(_ context.Context, it todolist.Item) error {
			worked = append(worked, it.ID)
			return nil
		}, todolist.WithClock(clock))
		require.NoError(t, err)
		require.NoError(t, day(ctx, tick.DayHasPassed{Passage: tick.Passage{At: t0.Add(24 * time.Hour)}}))
		require.Equal(t, []string{"after-boundary"}, worked)

		stats, err := l.Stats(ctx, t0.Add(3*time.Hour))
		require.NoError(t, err)
		require.Equal(t, todolist.Stats{Pending: 1, Due: 1, OldestDue: t0.Add(2 * time.Hour), Completed: 3}, stats)
	})
}

func TestFailuresBackOffThenParkWithTheLastError(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		l := openList(t, db, "orders")
		addItems(t, l, t0, "a")
		clock := clockwork.NewFakeClockAt(t0)

		calls := 0
		var failed, parked []todolist.Item
		var ticks []todolist.Result
		p := newProcessor(t, l, clock, func(context.Context, todolist.Item) error {
			calls++
			return fmt.Errorf("attempt %d: %w", calls, errFailed)
		},
			todolist.WithMaxAttempts(3),
			todolist.WithBackoff(time.Minute, 90*time.Second),
			todolist.WithObserver(todolist.Observer{
				Failed: func(list string, it todolist.Item, err error) {
					require.Equal(t, "orders", list)
					require.ErrorIs(t, err, errFailed)
					failed = append(failed, it)
				},
				Parked: func(_ string, it todolist.Item, _ error) { parked = append(parked, it) },
				Tick:   func(_ string, r todolist.Result) { ticks = append(ticks, r) },
			}))
		tickAt := func(d time.Duration) todolist.Result {
			t.Helper()
			clock.Advance(t0.Add(d).Sub(clock.Now()))
			r, err := p.Process(ctx, clock.Now())
			require.NoError(t, err)
			return r
		}

		require.Equal(t, todolist.Result{Cutoff: t0, Claimed: 1, Failed: 1}, tickAt(0))
		a, err := l.Get(ctx, "a")
		require.NoError(t, err)
		require.Equal(t, todolist.Item{ID: "a", Due: t0, NextAttempt: t0.Add(time.Minute), Attempts: 1,
			LastError: "attempt 1: payment service unavailable"}, a)

		require.Zero(t, tickAt(30*time.Second).Claimed, "backing off")
		require.Equal(t, 1, tickAt(time.Minute).Failed)
		a, err = l.Get(ctx, "a")
		require.NoError(t, err)
		require.Equal(t, 2, a.Attempts)
		require.Equal(t, t0.Add(time.Minute+90*time.Second), a.NextAttempt, "doubled, capped at 90 s")

		require.Zero(t, tickAt(2*time.Minute).Claimed, "backing off")
		require.Equal(t, 1, tickAt(2*time.Minute+30*time.Second).Parked)
		require.Zero(t, tickAt(time.Hour).Claimed, "parked items are left alone")
		require.Equal(t, 3, calls)

		list, err := l.Parked(ctx, 10)
		require.NoError(t, err)
		require.Len(t, list, 1)
		require.Equal(t, "a", list[0].ID)
		require.True(t, list[0].Parked)
		require.Equal(t, 3, list[0].Attempts)
		require.Equal(t, "attempt 3: payment service unavailable", list[0].LastError)
		require.Len(t, failed, 2)
		require.Equal(t, []string{"a"}, ids(parked))
		require.Len(t, ticks, 6, "every tick is reported")

		// Re-activation: a fresh start, taken by the next tick.
		require.NoError(t, l.Reactivate(ctx, "a"))
		require.NoError(t, l.Reactivate(ctx, "a"), "re-activating twice is harmless")
		require.ErrorIs(t, l.Reactivate(ctx, "nope"), todolist.ErrNotFound)
		due, err := l.Due(ctx, clock.Now(), 10)
		require.NoError(t, err)
		require.Equal(t, []todolist.Item{{ID: "a", Due: t0, NextAttempt: t0}}, due)
		require.Equal(t, 1, tickAt(time.Hour+time.Minute).Failed, "counting starts again")
	})
}

func TestPanicIsAFailedAttempt(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		l := openList(t, db, "orders")
		addItems(t, l, t0, "a", "b")
		var failures []error
		p := newProcessor(t, l, clockwork.NewFakeClockAt(t0), func(_ context.Context, it todolist.Item) error {
			if it.ID == "a" {
				panic("kaboom")
			}
			return nil
		}, todolist.WithObserver(todolist.Observer{Failed: func(_ string, _ todolist.Item, err error) { failures = append(failures, err) }}))

		r, err := p.Process(ctx, t0)
		require.NoError(t, err)
		require.Equal(t, 1, r.Done, "the panic does not hide the other item")
		require.Equal(t, 1, r.Failed)
		require.Len(t, failures, 1)
		require.ErrorIs(t, failures[0], todolist.ErrActionPanicked)
		a, err := l.Get(ctx, "a")
		require.NoError(t, err)
		require.Equal(t, 1, a.Attempts)
		require.Contains(t, a.LastError, "kaboom")
	})
}

func TestVersionConflictIsRetriedNextTickWithoutCountingAnAttempt(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		l := openList(t, db, "orders")
		addItems(t, l, t0, "a")
		clock := clockwork.NewFakeClockAt(t0)
		calls := 0
		p := newProcessor(t, l, clock, func(context.Context, todolist.Item) error {
			calls++
			if calls == 1 {
				return fmt.Errorf("cancel order: %w", conflictError{})
			}
			return nil
		}, todolist.WithMaxAttempts(1))

		r, err := p.Process(ctx, t0)
		require.NoError(t, err)
		require.Equal(t, todolist.Result{Cutoff: t0, Claimed: 1, Conflicts: 1}, r, "not failed, not parked with one attempt allowed")
		require.Equal(t, 1, calls, "the tick does not spin on the conflict")
		a, err := l.Get(ctx, "a")
		require.NoError(t, err)
		require.Zero(t, a.Attempts)
		require.False(t, a.Claimed)

		r, err = p.Process(ctx, t0)
		require.NoError(t, err)
		require.Zero(t, r.Claimed, "the same tick handled again leaves it for the next")

		clock.Advance(time.Minute)
		r, err = p.Process(ctx, clock.Now())
		require.NoError(t, err)
		require.Equal(t, 1, r.Done)
	})
}

func TestChangesMadeWhileAnItemIsWorkedAreKept(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		l := openList(t, db, "orders")
		addItems(t, l, t0, "extended", "removed")
		p := newProcessor(t, l, clockwork.NewFakeClockAt(t0), func(ctx context.Context, it todolist.Item) error {
			if it.ID == "extended" {
				// The order's deadline was extended while the old one
				// was being handled.
				return l.Add(ctx, it.ID, t0.Add(time.Hour))
			}
			require.NoError(t, l.Remove(ctx, it.ID))
			return errFailed
		})
		r, err := p.Process(ctx, t0)
		require.NoError(t, err)
		require.Equal(t, todolist.Result{Cutoff: t0, Claimed: 2, Done: 1, Lost: 2}, r)

		requireReAdded(t, l, "extended", t0.Add(time.Hour))
		_, err = l.Get(ctx, "removed")
		require.ErrorIs(t, err, todolist.ErrNotFound, "a failure does not resurrect a removed item")
		stats, err := l.Stats(ctx, t0)
		require.NoError(t, err)
		require.Equal(t, todolist.Stats{Pending: 1, Completed: 1}, stats,
			"the action removed its item: completed, and no failure to record; the extended one is still to do")
	})
}

// requireReAdded checks that id, re-added due at due while it was worked,
// is on the list as new work.
func requireReAdded(t *testing.T, l *todolist.List, id string, due time.Time) {
	t.Helper()
	it, err := l.Get(context.Background(), id)
	require.NoError(t, err, "the re-add is not lost")
	require.Equal(t, todolist.Item{ID: id, Due: due, NextAttempt: due}, it)
}

// Done items are removed set-wise when their batch ends, before the next
// batch is claimed, so changes made before then must survive the removal
// too, and a live claim must hide its item.
func TestChangesMadeBeforeTheNextBatchAreKept(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		clock := clockwork.NewFakeClockAt(t0)
		l := openList(t, db, "orders", todolist.WithListClock(clock))
		addItems(t, l, t0.Add(-2*time.Minute), "extended")
		addItems(t, l, t0.Add(-time.Minute), "removed")
		addItems(t, l, t0, "plain")
		p := newProcessor(t, l, clock, func(ctx context.Context, it todolist.Item) error {
			switch it.ID {
			case "extended":
				return l.Add(ctx, it.ID, t0.Add(time.Hour))
			case "removed":
				return l.Remove(ctx, it.ID)
			}
			held, err := l.Get(ctx, it.ID)
			require.NoError(t, err)
			require.True(t, held.Claimed)
			require.Equal(t, t0.Add(time.Minute), held.NextAttempt, "held until the lease ends")
			due, err := l.Due(ctx, t0, 10)
			require.NoError(t, err)
			require.Empty(t, due, "a live claim hides the item")
			return nil
		}, todolist.WithBatchSize(1), todolist.WithLease(time.Minute))

		r, err := p.Process(ctx, t0)
		require.NoError(t, err)
		require.Equal(t, todolist.Result{Cutoff: t0, Claimed: 3, Done: 3, Lost: 2}, r)
		requireReAdded(t, l, "extended", t0.Add(time.Hour))
		stats, err := l.Stats(ctx, t0)
		require.NoError(t, err)
		require.Equal(t, 1, stats.Pending)
	})
}

func TestAProcessorThatLostItsLeaseLeavesTheItemAlone(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		l := openList(t, db, "orders")
		addItems(t, l, t0, "a")
		clock := clockwork.NewFakeClockAt(t0)
		other := newProcessor(t, l, clock, fail, todolist.WithLease(time.Minute))
		slow := newProcessor(t, l, clock, func(ctx context.Context, it todolist.Item) error {
			// Too slow: the lease runs out and another processor takes
			// the item and fails it.
			clock.Advance(2 * time.Minute)
			r, err := other.Process(ctx, clock.Now())
			require.NoError(t, err)
			require.Equal(t, 1, r.Failed)
			return nil
		}, todolist.WithLease(time.Minute))

		r, err := slow.Process(ctx, t0)
		require.NoError(t, err)
		require.Equal(t, 1, r.Done)
		require.Equal(t, 1, r.Lost)
		a, err := l.Get(ctx, "a")
		require.NoError(t, err, "the late success does not remove the other processor's item")
		require.Equal(t, 1, a.Attempts)
		require.Equal(t, errFailed.Error(), a.LastError)
	})
}

func TestTwoProcessorsWorkEveryItemExactlyOnce(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, dsn string) {
		// Bounds the wait of the processors for each other.
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		l1, l2 := openTwice(t, ctx, db, dsn, "orders")

		const n = 300
		want := make([]string, n)
		for i := range want {
			want[i] = fmt.Sprintf("order-%03d", i)
		}
		addItems(t, l1, t0, want...)

		var mu sync.Mutex
		count := map[string]int{}
		running := map[string]bool{}
		overlaps := 0
		// Each processor's first action waits until the other's has
		// started too, so both provably hold items at the same moment.
		meet := rendezvous(2)
		action := func(me int) todolist.Action {
			return func(ctx context.Context, it todolist.Item) error {
				mu.Lock()
				if running[it.ID] {
					overlaps++
				}
				running[it.ID] = true
				count[it.ID]++
				mu.Unlock()
				meet[me](ctx)
				runtime.Gosched() // let the other processor run while this item is in flight
				mu.Lock()
				delete(running, it.ID)
				mu.Unlock()
				return nil
			}
		}
		results := processTogether(t, ctx, action, l1, l2)

		require.Zero(t, overlaps, "no item ran on two processors at once")
		require.Len(t, count, n)
		for _, id := range want {
			require.Equal(t, 1, count[id], "item %s", id)
		}
		require.Equal(t, n, results[0].Done+results[1].Done)
		require.Positive(t, results[0].Done, "both processors worked")
		require.Positive(t, results[1].Done, "both processors worked")
		stats, err := l1.Stats(ctx, t0)
		require.NoError(t, err)
		require.Zero(t, stats.Pending)
	})
}

func TestAKilledProcessorLosesNothing(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		l := openList(t, db, "orders")
		var all []string
		for i := range 20 {
			all = append(all, fmt.Sprintf("order-%02d", i))
		}
		addItems(t, l, t0, all...)
		clock := clockwork.NewFakeClockAt(t0)

		var mu sync.Mutex
		count := map[string]int{}
		record := func(id string) {
			mu.Lock()
			defer mu.Unlock()
			count[id]++
		}
		killCtx, kill := context.WithCancel(ctx)
		defer kill()
		calls := 0
		doomed := newProcessor(t, l, clock, func(ctx context.Context, it todolist.Item) error {
			calls++
			if calls == 4 {
				kill() // the process dies in the middle of its first batch
				return ctx.Err()
			}
			record(it.ID)
			return nil
		}, todolist.WithBatchSize(10), todolist.WithLease(time.Minute))
		survivor := newProcessor(t, l, clock, func(_ context.Context, it todolist.Item) error {
			record(it.ID)
			return nil
		}, todolist.WithBatchSize(10), todolist.WithLease(time.Minute))

		_, err := doomed.Process(killCtx, t0)
		require.ErrorIs(t, err, context.Canceled)
		require.ErrorContains(t, err, "claims lapse after the lease")

		r, err := survivor.Process(ctx, clock.Now())
		require.NoError(t, err)
		require.Equal(t, 10, r.Done, "the dead processor's claims still hold")

		clock.Advance(time.Minute)
		r, err = survivor.Process(ctx, clock.Now())
		require.NoError(t, err)
		require.Equal(t, 7, r.Done, "after the lease the survivor finishes the batch, except what was done before the kill")

		require.Len(t, count, 20, "every item was worked")
		for id, n := range count {
			require.Equal(t, 1, n, "item %s worked once", id)
		}
		stats, err := l.Stats(ctx, clock.Now())
		require.NoError(t, err)
		require.Zero(t, stats.Pending)
		require.Equal(t, int64(20), stats.Completed, "the dead processor's successes count too, once")
	})
}

func TestBudgetsLeaveTheRestForTheNextTick(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		t.Run("count", func(t *testing.T) {
			l := openList(t, db, "by-count")
			for i := range 25 {
				addItems(t, l, t0, fmt.Sprintf("item-%02d", i))
			}
			p := newProcessor(t, l, clockwork.NewFakeClockAt(t0), succeed, todolist.WithMaxItems(10), todolist.WithBatchSize(4))
			for _, want := range []todolist.Result{
				{Cutoff: t0, Claimed: 10, Done: 10, Backlog: 15},
				{Cutoff: t0, Claimed: 10, Done: 10, Backlog: 5},
				{Cutoff: t0, Claimed: 5, Done: 5, Backlog: 0},
			} {
				r, err := p.Process(ctx, t0)
				require.NoError(t, err)
				require.Equal(t, want, r)
			}
		})
		t.Run("time", func(t *testing.T) {
			l := openList(t, db, "by-time")
			for i := range 10 {
				addItems(t, l, t0, fmt.Sprintf("item-%02d", i))
			}
			clock := clockwork.NewFakeClockAt(t0)
			var worked []string
			p := newProcessor(t, l, clock, func(_ context.Context, it todolist.Item) error {
				worked = append(worked, it.ID)
				clock.Advance(2 * time.Second) // each action takes 2 s
				return nil
			}, todolist.WithTimeBudget(5*time.Second))

			r, err := p.Process(ctx, t0)
			require.NoError(t, err)
			require.Equal(t, todolist.Result{Cutoff: t0, Claimed: 10, Done: 3, Released: 7, Backlog: 7}, r)
			require.Equal(t, []string{"item-00", "item-01", "item-02"}, worked)

			r, err = p.Process(ctx, clock.Now())
			require.NoError(t, err)
			require.Equal(t, 3, r.Done, "released items are taken at once, not after the lease")
			require.Equal(t, []string{"item-03", "item-04", "item-05"}, worked[3:])
		})
	})
}

// notConflict has a Conflict method that answers false: an error that
// knows it is no version conflict, which must not hide one beside or
// beneath it.
type notConflict struct{ err error }

func (e notConflict) Error() string {
	if e.err == nil {
		return "not a conflict"
	}
	return "not a conflict: " + e.err.Error()
}
func (e notConflict) Unwrap() error { return e.err }
func (notConflict) Conflict() bool  { return false }

// The conflict rule looks at the whole error tree: a conflict anywhere in
// it makes the outcome a conflict, also when the tree holds real failures
// too; only a tree without one is a failure.
func TestAConflictAnywhereInTheErrorTreeIsAConflict(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		err      error
		conflict bool
	}{
		{"beside a Conflict() false", errors.Join(notConflict{}, conflictError{}), true},
		{"beneath a Conflict() false", notConflict{err: fmt.Errorf("append: %w", conflictError{})}, true},
		{"deep in a join in a join", fmt.Errorf("cancel: %w", errors.Join(errFailed, errors.Join(notConflict{}, conflictError{}))), true},
		{"beside a real failure", errors.Join(errFailed, conflictError{}), true},
		{"a Conflict() false alone", notConflict{}, false},
		{"a Conflict() false beside a failure", errors.Join(notConflict{}, errFailed), false},
	}
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		l := openList(t, db, "orders")
		byID := map[string]error{}
		var conflicts, failures []string
		for i, c := range cases {
			id := fmt.Sprintf("case-%d", i)
			byID[id] = c.err
			addItems(t, l, t0, id)
			if c.conflict {
				conflicts = append(conflicts, id)
			} else {
				failures = append(failures, id)
			}
		}
		p := newProcessor(t, l, clockwork.NewFakeClockAt(t0), func(_ context.Context, it todolist.Item) error {
			return byID[it.ID]
		}, todolist.WithMaxAttempts(1))

		r, err := p.Process(ctx, t0)
		require.NoError(t, err)
		require.Equal(t, todolist.Result{Cutoff: t0, Claimed: len(cases), Conflicts: len(conflicts), Parked: len(failures)}, r,
			"with one attempt allowed, a failure parks and a conflict does not")
		parked, err := l.Parked(ctx, 10)
		require.NoError(t, err)
		require.Equal(t, failures, ids(parked))
		for _, id := range conflicts {
			it, err := l.Get(ctx, id)
			require.NoError(t, err)
			require.Zero(t, it.Attempts, "%s: no attempt counted", id)
			require.False(t, it.Parked, "%s", id)
		}
		stats, err := l.Stats(ctx, t0)
		require.NoError(t, err)
		require.Equal(t, int64(len(failures)), stats.Failures)
	})
}
