package todolist_test

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/todolist"
)

// A projection replaying a later deadline (still past) while the item is
// worked must not let a second processor start it at the same moment.
func TestAReAddedItemWaitsForTheRunInFlight(t *testing.T) {
	t.Parallel()
	for _, outcome := range []struct {
		name string
		err  error
	}{{"done", nil}, {"failed", errFailed}} {
		t.Run(outcome.name, func(t *testing.T) {
			t.Parallel()
			eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
				ctx := context.Background()
				clock := clockwork.NewFakeClockAt(t0)
				l := openList(t, db, "orders", todolist.WithListClock(clock))
				addItems(t, l, t0.Add(-time.Hour), "a")
				var worked []time.Time
				other := newProcessor(t, l, clock, func(_ context.Context, it todolist.Item) error {
					worked = append(worked, it.Due)
					return nil
				})
				first := newProcessor(t, l, clock, func(ctx context.Context, it todolist.Item) error {
					require.NoError(t, l.Add(ctx, "a", t0.Add(-30*time.Minute)))
					held, err := l.Get(ctx, "a")
					require.NoError(t, err)
					require.True(t, held.Claimed, "the re-add keeps the claim")
					r, err := other.Process(ctx, t0)
					require.NoError(t, err)
					require.Zero(t, r.Claimed, "another processor must not start the item while it runs here")
					return outcome.err
				})

				r, err := first.Process(ctx, t0)
				require.NoError(t, err)
				require.Equal(t, todolist.Result{Cutoff: t0, Claimed: 1, Done: r.Done, Lost: 1, Backlog: 1}, r, "the re-added item is left for the next tick")
				requireReAdded(t, l, "a", t0.Add(-30*time.Minute))

				r, err = other.Process(ctx, t0)
				require.NoError(t, err)
				require.Equal(t, 1, r.Done, "once the first run ended, the re-added item is new work")
				require.Equal(t, []time.Time{t0.Add(-30 * time.Minute)}, worked)
			})
		})
	}
}

func TestClaimedEndsWithTheLease(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		clock := clockwork.NewFakeClockAt(t0)
		l := openList(t, db, "orders", todolist.WithListClock(clock))
		addItems(t, l, t0, "a")
		killCtx, kill := context.WithCancel(ctx)
		defer kill()
		p := newProcessor(t, l, clock, func(ctx context.Context, _ todolist.Item) error {
			kill()
			return ctx.Err()
		}, todolist.WithLease(time.Minute))
		_, err := p.Process(killCtx, t0)
		require.ErrorIs(t, err, context.Canceled)

		a, err := l.Get(ctx, "a")
		require.NoError(t, err)
		require.Equal(t, todolist.Item{ID: "a", Due: t0, NextAttempt: t0.Add(time.Minute), Claimed: true}, a)

		clock.Advance(time.Minute)
		a, err = l.Get(ctx, "a")
		require.NoError(t, err)
		require.Equal(t, todolist.Item{ID: "a", Due: t0, NextAttempt: t0}, a, "a lapsed lease holds nothing")
		due, err := l.Due(ctx, clock.Now(), 10)
		require.NoError(t, err)
		require.Equal(t, []todolist.Item{a}, due)
	})
}

func TestBackoffNeverWrapsAround(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		// Late in the range the storage holds: ten years later is past it.
		start := time.Date(2258, 1, 1, 0, 0, 0, 0, time.UTC)
		clock := clockwork.NewFakeClockAt(start)
		l := openList(t, db, "orders", todolist.WithListClock(clock))
		addItems(t, l, start, "a")
		p := newProcessor(t, l, clock, fail, todolist.WithMaxAttempts(100), todolist.WithBackoff(todolist.MaxBackoff, todolist.MaxBackoff))

		r, err := p.Process(ctx, start)
		require.NoError(t, err)
		require.Equal(t, 1, r.Failed)
		a, err := l.Get(ctx, "a")
		require.NoError(t, err)
		require.Equal(t, time.Unix(0, math.MaxInt64).UTC(), a.NextAttempt, "capped at the last instant stored")
		r, err = p.Process(ctx, start)
		require.NoError(t, err)
		require.Zero(t, r.Claimed, "not retried at once")
	})
}

func TestBackoffDoublesUpToItsCeiling(t *testing.T) {
	t.Parallel()
	db, _ := sqldbtest.SQLite(t)
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(t0)
	l := openList(t, db, "orders", todolist.WithListClock(clock))
	addItems(t, l, t0, "a")
	var waits []time.Duration
	p := newProcessor(t, l, clock, fail, todolist.WithMaxAttempts(100),
		todolist.WithBackoff(time.Hour, todolist.MaxBackoff),
		todolist.WithObserver(todolist.Observer{Failed: func(_ string, it todolist.Item, _ error) {
			waits = append(waits, it.NextAttempt.Sub(clock.Now()))
		}}))
	for range 20 {
		_, err := p.Process(ctx, clock.Now())
		require.NoError(t, err)
		clock.Advance(waits[len(waits)-1])
	}
	require.Equal(t, time.Hour, waits[0])
	require.Equal(t, 2*time.Hour, waits[1])
	require.Equal(t, todolist.MaxBackoff, waits[len(waits)-1], "doubling stops at the ceiling")
	for i := 1; i < len(waits); i++ {
		require.GreaterOrEqual(t, waits[i], waits[i-1], "never wraps to a shorter wait")
	}
}

// On PostgreSQL a row may change while the previous batch is settled: the
// settle waits for a lock another transaction holds on one of its done
// rows, and that transaction moves a due row meanwhile. The claim that
// follows must see the row in its new version, and the tick take it rather
// than stop and report no backlog.
func TestARowChangedDuringTheClaimIsTakenInTheSameTick(t *testing.T) {
	t.Parallel()
	db, dsn := sqldbtest.Postgres(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	db2, err := sqldb.Open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db2.Close() })
	clock := clockwork.NewFakeClockAt(t0)
	l := openList(t, db, "orders", todolist.WithListClock(clock))
	l2, err := todolist.Open(ctx, db2.DB, "orders")
	require.NoError(t, err)
	for i, id := range []string{"s1", "s2", "r", "s3", "s4"} {
		addItems(t, l, t0.Add(time.Duration(i-5)*time.Minute), id)
	}
	moved := t0.Add(-150 * time.Second) // later, still due

	// While s2, the last item of the first batch, is worked, another
	// transaction locks s2 and moves r. The next claim first deletes the
	// first batch's done items, so it waits for s2's lock; the transaction
	// commits meanwhile.
	var mu sync.Mutex
	worked := map[string]time.Time{}
	held := make(chan int)
	var tx interface {
		Commit() error
		Rollback() error
	}
	p := newProcessor(t, l, clock, func(ctx context.Context, it todolist.Item) error {
		mu.Lock()
		worked[it.ID] = it.Due
		mu.Unlock()
		if it.ID != "s2" {
			return nil
		}
		btx, err := db2.BeginTxx(ctx, nil)
		require.NoError(t, err)
		tx = btx
		var pid int
		require.NoError(t, btx.GetContext(ctx, &pid, `SELECT pg_backend_pid()`))
		_, err = btx.ExecContext(ctx, `SELECT 1 FROM todolist_items WHERE list = 'orders' AND id = 's2' FOR UPDATE`)
		require.NoError(t, err)
		require.NoError(t, l2.AddTx(ctx, btx, "r", moved))
		held <- pid
		return nil
	}, todolist.WithBatchSize(2))

	type outcome struct {
		r   todolist.Result
		err error
	}
	result := make(chan outcome, 1)
	go func() {
		r, err := p.Process(ctx, t0)
		result <- outcome{r, err}
	}()
	pid := <-held
	require.Eventually(t, func() bool {
		var blocking bool
		require.NoError(t, db.GetContext(ctx, &blocking,
			`SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid)))`, pid))
		return blocking
	}, 30*time.Second, time.Millisecond, "the next claim waits for the lock")
	require.NoError(t, tx.Commit())

	out := <-result
	require.NoError(t, out.err)
	require.Equal(t, 5, out.r.Done)
	require.Zero(t, out.r.Backlog)
	require.Equal(t, moved, worked["r"], "the moved row was taken in its new version")
	left, err := l.Due(ctx, t0, 10)
	require.NoError(t, err)
	require.Empty(t, left)
}

// On PostgreSQL a batch finds its rows by their place (ctid). Once vacuum
// has freed it, a later version of the same item can land in that very
// place: re-added twice while worked, the item must still be kept as new
// work, not deleted as the batch's done row.
func TestAReAddedItemInTheClaimedPlaceIsKept(t *testing.T) {
	t.Parallel()
	db, _ := sqldbtest.Postgres(t)
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(t0)
	l := openList(t, db, "orders", todolist.WithListClock(clock))
	addItems(t, l, t0.Add(-time.Hour), "a")
	place := func() string {
		var ctid string
		require.NoError(t, db.GetContext(ctx, &ctid, `SELECT ctid::text FROM todolist_items WHERE list = 'orders' AND id = 'a'`))
		return ctid
	}
	var latest time.Time
	p := newProcessor(t, l, clock, func(ctx context.Context, _ todolist.Item) error {
		claimedAt := place()
		// Vacuum frees the old places only once no transaction of the
		// database can see them, and tests of other packages share the
		// database: re-add and vacuum until the item is back.
		for round := 1; round <= 100; round++ {
			latest = t0.Add(-time.Hour + time.Duration(round)*time.Second)
			require.NoError(t, l.Add(ctx, "a", latest))
			if place() == claimedAt {
				return nil
			}
			_, err := db.ExecContext(ctx, `VACUUM todolist_items`)
			require.NoError(t, err)
		}
		t.Skip("vacuum never freed the claimed place: other transactions held it")
		return nil
	})

	r, err := p.Process(ctx, t0)
	require.NoError(t, err)
	require.Equal(t, 1, r.Lost, "the done outcome belongs to the old deadline")
	requireReAdded(t, l, "a", latest)
}

// A claim on PostgreSQL relies on each statement of the claim function
// seeing what committed before it, which only read committed gives: a
// session configured for a stronger isolation level gets a clear error
// instead of claims that could overlap.
func TestClaimsRefuseAStrongerIsolationLevel(t *testing.T) {
	t.Parallel()
	_, dsn := sqldbtest.Postgres(t)
	ctx := context.Background()
	strict, err := sqldb.Open(ctx, dsn+"&default_transaction_isolation=repeatable%20read")
	require.NoError(t, err)
	t.Cleanup(func() { _ = strict.Close() })
	l := openList(t, strict, "orders")
	addItems(t, l, t0, "a")
	p := newProcessor(t, l, clockwork.NewFakeClockAt(t0), succeed)

	_, err = p.Process(ctx, t0)
	require.ErrorContains(t, err, "read committed")
	due, err := l.Due(ctx, t0, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, ids(due), "nothing was claimed")
}

// An action that outlives its batch's lease lets another processor claim
// the batch's items. The first processor must then start none of the
// batch's other items: they are the other's now.
func TestABatchStartsNothingOnceItsLeaseEnded(t *testing.T) {
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
		first := newProcessor(t, l, clock, func(ctx context.Context, it todolist.Item) error {
			runs[it.ID]++
			if it.ID == "slow" {
				clock.Advance(2 * time.Minute) // past the lease
				r, err := other.Process(ctx, t0)
				require.NoError(t, err)
				require.Equal(t, 2, r.Done, "the lapsed claim let the other processor take both items")
			}
			return nil
		}, todolist.WithLease(time.Minute), todolist.WithTimeBudget(0))

		r, err := first.Process(ctx, t0)
		require.NoError(t, err)
		require.Equal(t, 1, runs["next"], "next ran once, on the processor that held it")
		require.Equal(t, 1, r.Done)
		require.Equal(t, 1, r.Lost, "slow's outcome was the other's to write")
	})
}
