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
	"github.com/passage-of-time/passage/todolist"
)

// Two processors, batches of several items, each action longer than half
// the lease, so that a batch takes longer than its lease and its second
// item starts with more than a third of the lease left but runs past its
// end: the renewals must hold every item for as long as its action runs,
// so that none runs twice or on both processors at once. The real clock
// runs (for about two seconds) and each processor ticks until the list is
// empty; what is asserted does not depend on timing, as long as a renewal
// does not take most of a second.
func TestSlowActionsInBatchesRunOnceOnTwoProcessors(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, dsn string) {
		// Bounds the test: the processors tick until the list is empty.
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		l1, l2 := openTwice(t, ctx, db, dsn, "orders")
		const (
			n      = 6
			batch  = 3
			lease  = 1200 * time.Millisecond
			action = 700 * time.Millisecond // a batch takes 2.1 s
		)
		for i := range n {
			addItems(t, l1, t0, fmt.Sprintf("order-%02d", i))
		}

		var mu sync.Mutex
		runs := map[string]int{}
		running := map[string]bool{}
		overlaps := 0
		meet := rendezvous(2)
		clock := clockwork.NewRealClock()
		var lost []error
		processors := make([]*todolist.Processor, 2)
		for i, l := range []*todolist.List{l1, l2} {
			processors[i] = newProcessor(t, l, clock, func(ctx context.Context, it todolist.Item) error {
				mu.Lock()
				if running[it.ID] {
					overlaps++
				}
				running[it.ID] = true
				runs[it.ID]++
				mu.Unlock()
				meet[i](ctx) // both processors provably hold a batch at once
				select {
				case <-clock.After(action):
				case <-ctx.Done():
					return ctx.Err()
				}
				mu.Lock()
				delete(running, it.ID)
				mu.Unlock()
				return nil
			}, todolist.WithBatchSize(batch), todolist.WithLease(lease),
				todolist.WithObserver(todolist.Observer{LeaseLost: func(_ string, err error) {
					mu.Lock()
					defer mu.Unlock()
					lost = append(lost, err)
				}}))
		}

		// Each processor ticks, as a ticker would make it, until the list
		// is empty.
		results := make([]todolist.Result, 2)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, p := range processors {
			wg.Go(func() {
				for ctx.Err() == nil {
					r, err := p.Process(ctx, clock.Now())
					if ctx.Err() != nil {
						return // the list never emptied: asserted below
					}
					if err != nil {
						errs[i] = err
						return
					}
					results[i].Done += r.Done
					results[i].Lost += r.Lost
					stats, err := l1.Stats(ctx, t0)
					if err != nil {
						errs[i] = err
						return
					}
					if stats.Pending == 0 {
						return
					}
					select {
					case <-clock.After(20 * time.Millisecond): // the next tick
					case <-ctx.Done():
					}
				}
			})
		}
		wg.Wait()
		require.NoError(t, errors.Join(errs...))
		mu.Lock()
		defer mu.Unlock()
		require.Zero(t, overlaps, "no item ran on two processors at once")
		require.Len(t, runs, n)
		for id, r := range runs {
			require.Equal(t, 1, r, "item %s ran once", id)
		}
		require.Empty(t, lost, "no lease was lost")
		require.Positive(t, results[0].Done, "both processors worked")
		require.Positive(t, results[1].Done, "both processors worked")
		require.Equal(t, n, results[0].Done+results[1].Done)
		require.Zero(t, results[0].Lost+results[1].Lost)
		stats, err := l2.Stats(ctx, t0)
		require.NoError(t, err)
		require.Equal(t, todolist.Stats{Completed: n}, stats, "one completion per item")
	})
}

// A batch whose first action runs longer than the lease keeps its items:
// the lease is renewed every third of it, so another processor takes
// nothing, and the next item still starts after the lease first set has
// passed.
func TestTheLeaseIsRenewedWhileAnActionRuns(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		clock := clockwork.NewFakeClockAt(t0)
		l := openList(t, db, "orders", todolist.WithListClock(clock))
		addItems(t, l, t0.Add(-time.Minute), "slow")
		addItems(t, l, t0, "next")
		runs := map[string]int{}
		other := newProcessor(t, l, clock, func(_ context.Context, it todolist.Item) error {
			runs[it.ID]++
			return nil
		})
		var started []time.Time
		first := newProcessor(t, l, clock, func(ctx context.Context, it todolist.Item) error {
			runs[it.ID]++
			started = append(started, clock.Now())
			if it.ID != "slow" {
				return nil
			}
			// 100 s in steps of 20 s, with a lease of 60 s: each step
			// wakes the renewal, which is waited for.
			for range 5 {
				require.NoError(t, clock.BlockUntilContext(ctx, 1), "the renewal waits for its time")
				clock.Advance(20 * time.Second)
			}
			require.NoError(t, clock.BlockUntilContext(ctx, 1), "the last renewal is done")
			held, err := l.Get(ctx, "next")
			require.NoError(t, err)
			require.True(t, held.Claimed)
			require.Equal(t, t0.Add(160*time.Second), held.NextAttempt, "renewed at 100 s for 60 s")
			r, err := other.Process(ctx, clock.Now())
			require.NoError(t, err)
			require.Zero(t, r.Claimed, "the renewed claim holds both items")
			return nil
		}, todolist.WithLease(time.Minute), todolist.WithTimeBudget(0))

		r, err := first.Process(ctx, t0)
		require.NoError(t, err)
		require.Equal(t, todolist.Result{Cutoff: t0, Claimed: 2, Done: 2}, r)
		require.Equal(t, map[string]int{"slow": 1, "next": 1}, runs)
		require.Equal(t, []time.Time{t0, t0.Add(100 * time.Second)}, started, "next started after the first lease would have ended")
		stats, err := l.Stats(ctx, clock.Now())
		require.NoError(t, err)
		require.Equal(t, todolist.Stats{Completed: 2}, stats)
	})
}

// A processor that stalls past its lease (here: the clock jumps) has lost
// its batch: another processor takes the items, and the first one starts
// nothing more, writes no outcome and reports the loss. Each item is
// completed once, in the totals of both backends alike.
func TestALapsedLeaseIsReportedAndCountsOneCompletion(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		clock := clockwork.NewFakeClockAt(t0)
		l := openList(t, db, "orders", todolist.WithListClock(clock))
		addItems(t, l, t0.Add(-time.Minute), "slow")
		addItems(t, l, t0, "next")
		runs := map[string]int{}
		other := newProcessor(t, l, clock, func(_ context.Context, it todolist.Item) error {
			runs[it.ID]++
			return nil
		}, todolist.WithLease(time.Minute))
		var lost []error
		first := newProcessor(t, l, clock, func(ctx context.Context, it todolist.Item) error {
			runs[it.ID]++
			clock.Advance(2 * time.Minute) // stalled past the lease
			r, err := other.Process(ctx, clock.Now())
			require.NoError(t, err)
			require.Equal(t, 2, r.Done, "the lapsed claim let the other processor take both items")
			return nil
		}, todolist.WithLease(time.Minute), todolist.WithTimeBudget(0),
			todolist.WithObserver(todolist.Observer{LeaseLost: func(list string, err error) {
				require.Equal(t, "orders", list)
				lost = append(lost, err)
			}}))

		r, err := first.Process(ctx, t0)
		require.NoError(t, err)
		require.Equal(t, todolist.Result{Cutoff: t0, Claimed: 2, Done: 1, Released: r.Released, Lost: 1, LeasesLost: 1}, r)
		require.Equal(t, map[string]int{"slow": 2, "next": 1}, runs, "next never started on the processor that lost it")
		require.Len(t, lost, 1)
		require.ErrorIs(t, lost[0], todolist.ErrLeaseLost)
		stats, err := l.Stats(ctx, clock.Now())
		require.NoError(t, err)
		require.Equal(t, todolist.Stats{Completed: 2}, stats, "slow ran twice but was completed once")
	})
}

// The same with actions that remove their own items, as those that append
// events a projection of the list applies do: the processor that took the
// items over completes both by removing them, and the late success finds
// its item gone and counts nothing.
func TestALateSuccessThatRemovesItsItemCountsNothing(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		clock := clockwork.NewFakeClockAt(t0)
		l := openList(t, db, "orders", todolist.WithListClock(clock))
		addItems(t, l, t0.Add(-time.Minute), "slow")
		addItems(t, l, t0, "next")
		other := newProcessor(t, l, clock, removeOwn(l), todolist.WithLease(time.Minute))
		first := newProcessor(t, l, clock, func(ctx context.Context, it todolist.Item) error {
			clock.Advance(2 * time.Minute) // stalled past the lease
			r, err := other.Process(ctx, clock.Now())
			require.NoError(t, err)
			require.Equal(t, 2, r.Done, "the lapsed claim let the other processor take both items")
			return removeOwn(l)(ctx, it)
		}, todolist.WithLease(time.Minute), todolist.WithTimeBudget(0))

		r, err := first.Process(ctx, t0)
		require.NoError(t, err)
		require.Equal(t, todolist.Result{Cutoff: t0, Claimed: 2, Done: 1, Released: r.Released, Lost: 1, LeasesLost: 1}, r)
		stats, err := l.Stats(ctx, clock.Now())
		require.NoError(t, err)
		require.Equal(t, todolist.Stats{Completed: 2}, stats, "slow ran twice but was completed once")
	})
}

// On PostgreSQL a renewal learns from the database that the claim is gone
// (here deleted by hand, as a processor with a clock running ahead would
// drop it): the processor starts nothing more and reports the loss.
func TestARenewalThatFindsTheClaimGoneStopsTheBatch(t *testing.T) {
	t.Parallel()
	db, _ := sqldbtest.Postgres(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	clock := clockwork.NewFakeClockAt(t0)
	l := openList(t, db, "orders", todolist.WithListClock(clock))
	addItems(t, l, t0.Add(-time.Minute), "first")
	addItems(t, l, t0, "second")
	renewals := make(chan bool, 10)
	var lost []error
	var worked []string
	p := newProcessor(t, l, clock, func(ctx context.Context, it todolist.Item) error {
		worked = append(worked, it.ID)
		_, err := db.ExecContext(ctx, `DELETE FROM todolist_claims`)
		require.NoError(t, err)
		require.NoError(t, clock.BlockUntilContext(ctx, 1))
		clock.Advance(20 * time.Second)
		require.False(t, <-renewals, "the renewal found no claim")
		return nil
	}, todolist.WithLease(time.Minute),
		todolist.WithRenewalHook(func(held bool, err error) {
			require.NoError(t, err)
			renewals <- held
		}),
		todolist.WithObserver(todolist.Observer{LeaseLost: func(_ string, err error) { lost = append(lost, err) }}))

	r, err := p.Process(ctx, t0)
	require.NoError(t, err)
	require.Equal(t, []string{"first"}, worked, "second did not start")
	require.Equal(t, todolist.Result{Cutoff: t0, Claimed: 2, Done: 1, Released: 1, Lost: 1, LeasesLost: 1, Backlog: 2}, r,
		"no outcome is written without the claim; the tick ends")
	require.Len(t, lost, 1)
	require.ErrorIs(t, lost[0], todolist.ErrLeaseLost)
	require.ErrorContains(t, lost[0], "lapsed or taken")
	due, err := l.Due(ctx, clock.Now(), 10)
	require.NoError(t, err)
	require.Equal(t, []string{"first", "second"}, ids(due), "both are left for the next tick")
}

// A failure takes the item out of its batch's claim at once: it is retried
// at its backoff time, not before, even while the rest of the batch still
// runs; the observer is told that time.
func TestAFailedItemIsRetriedAtItsBackoffTimeWhileItsBatchRuns(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		clock := clockwork.NewFakeClockAt(t0)
		l := openList(t, db, "orders", todolist.WithListClock(clock))
		addItems(t, l, t0.Add(-time.Minute), "a")
		addItems(t, l, t0, "slow")
		var retried []time.Time
		other := newProcessor(t, l, clock, func(_ context.Context, it todolist.Item) error {
			retried = append(retried, clock.Now())
			return errFailed
		})
		var failed []todolist.Item
		p := newProcessor(t, l, clock, func(ctx context.Context, it todolist.Item) error {
			if it.ID == "a" {
				return errFailed
			}
			for _, step := range []time.Duration{30 * time.Second, 29 * time.Second, time.Second} {
				clock.Advance(step)
				_, err := other.Process(ctx, clock.Now())
				require.NoError(t, err)
			}
			return nil
		}, todolist.WithBackoff(time.Minute, time.Hour),
			todolist.WithObserver(todolist.Observer{Failed: func(_ string, it todolist.Item, _ error) { failed = append(failed, it) }}))

		r, err := p.Process(ctx, t0)
		require.NoError(t, err)
		require.Equal(t, todolist.Result{Cutoff: t0, Claimed: 2, Done: 1, Failed: 1}, r)
		require.Len(t, failed, 1)
		require.Equal(t, t0.Add(time.Minute), failed[0].NextAttempt)
		require.Equal(t, []time.Time{t0.Add(time.Minute)}, retried, "retried once, at its backoff time, while the batch still ran")
		a, err := l.Get(ctx, "a")
		require.NoError(t, err)
		require.Equal(t, 2, a.Attempts)
	})
}
