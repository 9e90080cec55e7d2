package todolist_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/todolist"
)

func TestTotalsCountWhatProcessorsDid(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, dsn string) {
		ctx := context.Background()
		l := openList(t, db, "orders")
		addItems(t, l, t0, "ok-1", "ok-2", "ok-3", "ok-4", "ok-5", "bad", "busy", "gone")
		clock := clockwork.NewFakeClockAt(t0)
		p := newProcessor(t, l, clock, func(ctx context.Context, it todolist.Item) error {
			switch it.ID {
			case "bad":
				return errFailed
			case "busy":
				return conflictError{}
			case "gone":
				// The action's own write removes the item, as a
				// projection of its events would: still completed.
				return l.Remove(ctx, it.ID)
			}
			return nil
		},
			// Small batches: outcomes are written by later claims and by
			// the end of the tick.
			todolist.WithBatchSize(3),
			todolist.WithMaxAttempts(2),
			todolist.WithBackoff(time.Minute, time.Minute))

		r, err := p.Process(ctx, t0)
		require.NoError(t, err)
		require.Equal(t, todolist.Result{Cutoff: t0, Claimed: 8, Done: 6, Failed: 1, Conflicts: 1, Lost: 1}, r)
		stats, err := l.Stats(ctx, t0)
		require.NoError(t, err)
		require.Equal(t, todolist.Stats{Pending: 2, Due: 2, OldestDue: t0, Completed: 6, Failures: 1}, stats)

		clock.Advance(time.Minute)
		r, err = p.Process(ctx, clock.Now())
		require.NoError(t, err)
		require.Equal(t, 1, r.Parked)
		require.Equal(t, 1, r.Conflicts)

		// Another process, such as the ticker serving /metrics, reads the
		// same totals.
		other, err := sqldb.Open(ctx, dsn)
		require.NoError(t, err)
		t.Cleanup(func() { _ = other.Close() })
		all, err := todolist.AllStats(ctx, other.DB, clock.Now())
		require.NoError(t, err)
		require.Equal(t, []todolist.ListStats{{Name: "orders", Stats: todolist.Stats{
			Pending: 1, Due: 1, Parked: 1, OldestDue: t0, Completed: 6, Failures: 2, Parkings: 1,
		}}}, all)

		require.NoError(t, l.Reactivate(ctx, "bad"))
		require.NoError(t, l.Remove(ctx, "busy"))
		stats, err = l.Stats(ctx, clock.Now())
		require.NoError(t, err)
		require.Equal(t, todolist.Stats{Pending: 1, Due: 1, OldestDue: t0, Completed: 6, Failures: 2, Parkings: 1}, stats,
			"changing items by hand leaves the totals alone")
	})
}

func TestTotalsOfConcurrentProcessorsAddUp(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, dsn string) {
		// Bounds the wait of the processors for each other.
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		l1, l2 := openTwice(t, ctx, db, dsn, "orders")

		const n, failing = 200, 40
		for i := range n {
			addItems(t, l1, t0, fmt.Sprintf("order-%03d", i))
		}
		// Each processor's first action waits until the other's has
		// started too, so that both write their batches' counts while
		// the other does.
		meet := rendezvous(2)
		action := func(me int) todolist.Action {
			return func(ctx context.Context, it todolist.Item) error {
				meet[me](ctx)
				var i int
				if _, err := fmt.Sscanf(it.ID, "order-%d", &i); err != nil {
					return err
				}
				if i%(n/failing) == 0 {
					return errFailed
				}
				return nil
			}
		}
		results := processTogether(t, ctx, action, l1, l2)
		require.Positive(t, results[0].Done, "both processors worked")
		require.Positive(t, results[1].Done, "both processors worked")

		stats, err := l2.Stats(ctx, t0)
		require.NoError(t, err)
		require.Equal(t, int64(n-failing), stats.Completed)
		require.Equal(t, int64(failing), stats.Failures)
		require.Zero(t, stats.Parkings)
		require.Equal(t, results[0].Done+results[1].Done, int(stats.Completed))
	})
}

func TestAllStatsListsAListWhoseItemsAreAllDone(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		clock := clockwork.NewFakeClockAt(t0)
		invoices := openList(t, db, "invoices")
		addItems(t, invoices, t0, "i1", "i2")
		_, err := newProcessor(t, invoices, clock, succeed).Process(ctx, t0)
		require.NoError(t, err)

		// Lists that never had an outcome: one emptied by hand, one
		// whose processor found nothing due.
		refunds := openList(t, db, "refunds")
		addItems(t, refunds, t0, "r1")
		require.NoError(t, refunds.Remove(ctx, "r1"))
		idle := openList(t, db, "idle")
		_, err = newProcessor(t, idle, clock, succeed).Process(ctx, t0)
		require.NoError(t, err)

		all, err := todolist.AllStats(ctx, db.DB, t0)
		require.NoError(t, err)
		require.Equal(t, []todolist.ListStats{{Name: "invoices", Stats: todolist.Stats{Completed: 2}}}, all)
		stats, err := invoices.Stats(ctx, t0)
		require.NoError(t, err)
		require.Equal(t, todolist.Stats{Completed: 2}, stats)
		stats, err = idle.Stats(ctx, t0)
		require.NoError(t, err)
		require.Equal(t, todolist.Stats{}, stats)
	})
}

// Processors are killed again and again in the middle of their batches,
// right after an action succeeded, and their successors take over once
// the dead ones' leases ran out. The actions remove their own items, as
// a projection of the events they append does, so no later processor sees
// those items again: only the processor that worked an item can count it.
// Completed must match the successes, on both engines.
func TestTotalsMatchWhatHappenedAcrossKills(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		clock := clockwork.NewFakeClockAt(t0)
		l := openList(t, db, "orders", todolist.WithListClock(clock))
		const n = 40
		for i := range n {
			addItems(t, l, t0, fmt.Sprintf("order-%02d", i))
		}
		succeeded := map[string]int{}
		calls, kills := 0, 0
		for round := 0; round < 50; round++ {
			killCtx, kill := context.WithCancel(ctx)
			p := newProcessor(t, l, clock, func(ctx context.Context, it todolist.Item) error {
				calls++
				if calls%3 == 0 {
					// Killed before this one: no effect.
					kill()
					return ctx.Err()
				}
				if err := l.Remove(ctx, it.ID); err != nil {
					return err
				}
				succeeded[it.ID]++
				if calls%7 == 0 {
					kill() // killed right after a success
				}
				return nil
			}, todolist.WithBatchSize(4), todolist.WithLease(time.Minute))
			_, err := p.Process(killCtx, clock.Now())
			if err != nil {
				require.ErrorIs(t, err, context.Canceled)
				kills++
			}
			kill()
			stats, err := l.Stats(ctx, clock.Now())
			require.NoError(t, err)
			if stats.Pending == 0 {
				break
			}
			clock.Advance(time.Minute) // the dead processor's claims lapse
		}
		require.Positive(t, kills)
		require.Len(t, succeeded, n, "every item was worked")
		for id, c := range succeeded {
			require.Equal(t, 1, c, "item %s succeeded once", id)
		}
		stats, err := l.Stats(ctx, clock.Now())
		require.NoError(t, err)
		require.Equal(t, todolist.Stats{Completed: n}, stats)
	})
}

// removeOwn is an action that removes its own item in a transaction of its
// own, under the ctx the processor gave it, as an action appending events
// that a projection of the list applies does.
func removeOwn(l *todolist.List) todolist.Action {
	return func(ctx context.Context, it todolist.Item) error {
		tx, err := l.DB().BeginTxx(ctx, nil)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		if err := l.RemoveTx(ctx, tx, it.ID); err != nil {
			return err
		}
		return tx.Commit()
	}
}

// A processor dies outright (kill -9) in the middle of a batch, after some
// of its actions removed their own items and committed: it settles
// nothing. No one works those items again, so their removal must have
// counted them; the survivor counts the rest once the lease ran out.
func TestTotalsCountTheCompletionsOfAProcessorThatDied(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		clock := clockwork.NewFakeClockAt(t0)
		l := openList(t, db, "orders", todolist.WithListClock(clock))
		const n = 12
		for i := range n {
			addItems(t, l, t0, fmt.Sprintf("order-%02d", i))
		}
		calls := 0
		doomed := newProcessor(t, l, clock, func(ctx context.Context, it todolist.Item) error {
			calls++
			if calls == 8 {
				// The process dies: the goroutine ends here, so neither
				// this batch's settle nor anything after it runs.
				runtime.Goexit()
			}
			return removeOwn(l)(ctx, it)
		}, todolist.WithBatchSize(5), todolist.WithLease(time.Minute))
		died := make(chan struct{})
		go func() {
			defer close(died)
			_, _ = doomed.Process(ctx, t0)
			t.Error("the doomed processor returned")
		}()
		<-died

		stats, err := l.Stats(ctx, clock.Now())
		require.NoError(t, err)
		require.Equal(t, todolist.Stats{Pending: n - 7, Due: n - 7, OldestDue: t0, Completed: 7}, stats,
			"the first batch settled; the second's two removals counted themselves")

		survivor := newProcessor(t, l, clock, removeOwn(l), todolist.WithLease(time.Minute))
		r, err := survivor.Process(ctx, clock.Now())
		require.NoError(t, err)
		require.Equal(t, n-10, r.Done, "the dead processor's claims still hold")
		clock.Advance(time.Minute)
		r, err = survivor.Process(ctx, clock.Now())
		require.NoError(t, err)
		require.Equal(t, 3, r.Done, "after the lease the survivor finishes the dead batch")

		stats, err = l.Stats(ctx, clock.Now())
		require.NoError(t, err)
		require.Equal(t, todolist.Stats{Completed: n}, stats, "every item completed once")
	})
}

// Only an action's removal of its own item completes it. Removing another
// item of the list, or an item with the same ID on another list, under an
// action's ctx counts nothing; neither does a removal outside any action,
// as a domain event (an order paid) makes it.
func TestOnlyAnActionRemovingItsOwnItemCompletesIt(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		clock := clockwork.NewFakeClockAt(t0)
		orders := openList(t, db, "orders", todolist.WithListClock(clock))
		refunds := openList(t, db, "refunds", todolist.WithListClock(clock))
		addItems(t, orders, t0.Add(-time.Minute), "a")
		addItems(t, orders, t0, "paid", "own")
		addItems(t, orders, t0.Add(time.Hour), "later")
		addItems(t, refunds, t0, "a")

		// An event outside any action: removed, not completed.
		require.NoError(t, orders.Remove(ctx, "paid"))
		p := newProcessor(t, orders, clock, func(ctx context.Context, it todolist.Item) error {
			if it.ID == "own" {
				return removeOwn(orders)(ctx, it)
			}
			// The action for a removes another item of its list and
			// the same ID on another list.
			if err := orders.Remove(ctx, "later"); err != nil {
				return err
			}
			return refunds.Remove(ctx, "a")
		})
		r, err := p.Process(ctx, t0)
		require.NoError(t, err)
		require.Equal(t, todolist.Result{Cutoff: t0, Claimed: 2, Done: 2, Lost: 1}, r)

		all, err := todolist.AllStats(ctx, db.DB, t0)
		require.NoError(t, err)
		require.Equal(t, []todolist.ListStats{{Name: "orders", Stats: todolist.Stats{Completed: 2}}}, all,
			"a, removed by its processor, and own, by its action; refunds never completed anything")
	})
}

// An action may end its item and start it anew: removed and added again in
// its own transaction, it is a new item, and the one it worked is
// completed. Moved to a later due time (added again without the removal),
// it is the same item, completed once when its later run removes it.
func TestAnItemReAddedByItsActionIsCompletedOncePerRemoval(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		clock := clockwork.NewFakeClockAt(t0)
		l := openList(t, db, "orders", todolist.WithListClock(clock))
		addItems(t, l, t0, "renewed", "moved")
		next := t0.Add(time.Hour)
		first := newProcessor(t, l, clock, func(ctx context.Context, it todolist.Item) error {
			tx, err := l.DB().BeginTxx(ctx, nil)
			if err != nil {
				return err
			}
			defer func() { _ = tx.Rollback() }()
			if it.ID == "renewed" {
				if err := l.RemoveTx(ctx, tx, it.ID); err != nil {
					return err
				}
			}
			if err := l.AddTx(ctx, tx, it.ID, next); err != nil {
				return err
			}
			return tx.Commit()
		})
		r, err := first.Process(ctx, t0)
		require.NoError(t, err)
		require.Equal(t, todolist.Result{Cutoff: t0, Claimed: 2, Done: 2, Lost: 2}, r)
		requireReAdded(t, l, "renewed", next)
		requireReAdded(t, l, "moved", next)
		stats, err := l.Stats(ctx, t0)
		require.NoError(t, err)
		require.Equal(t, int64(1), stats.Completed, "renewed's first item was removed, moved is still the same item")

		clock.Advance(time.Hour)
		r, err = newProcessor(t, l, clock, succeed).Process(ctx, clock.Now())
		require.NoError(t, err)
		require.Equal(t, 2, r.Done)
		stats, err = l.Stats(ctx, clock.Now())
		require.NoError(t, err)
		require.Equal(t, todolist.Stats{Completed: 3}, stats)
	})
}
