package schedule_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/todolist"
)

// On PostgreSQL a Sync that changes 1,000 schedules and two processors
// firing the same schedules' slots run together without a deadlock, and
// every slot is fired once or counted skipped, never both, never
// neither. They take their locks in one order, the to-do item before the
// schedule's row: a batch locks its items when it takes them (FOR UPDATE
// SKIP LOCKED: it never waits for an item) and only then writes their
// rows; Sync holds each changed schedule's item before it locks its row
// (Scheduler.load). A row is thus only ever locked by the transaction that
// holds its item, and whoever waits for a row waits for the holder of an
// item it holds itself: no cycle. A deadlock would fail a batch (an
// attempt counted against each of its slots) or the whole Sync.
func TestSyncingThousandsWhileTwoProcessorsFireDoesNotDeadlock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, dsn := sqldbtest.Postgres(t)
	start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	// Ticks come half a minute past the minute: every slot's jittered
	// time has come then.
	clock := clockwork.NewFakeClockAt(start.Add(30 * time.Second))
	// Two specs with the same slots, every minute, and different text:
	// each Sync changes every schedule, and reprograms it from now.
	specs := []schedule.Spec{
		mustSpec(t)(schedule.Cron("* * * * *", nil)),
		mustSpec(t)(schedule.Every(time.Minute, start)),
	}
	const n = 1000
	defs := func(round int) []schedule.Definition {
		out := make([]schedule.Definition, n)
		for i := range out {
			// The jitter makes the processors take the schedules in an
			// order of their own (by due time), across Sync's (by name):
			// so they meet all along, and a Sync that locked a row
			// before its item would hold one that a batch holding the
			// item waits for.
			out[i] = schedule.Definition{Name: fmt.Sprintf("s%04d", i), Spec: specs[round%2], Command: "poll", Jitter: 30 * time.Second}
		}
		// Applications declare in their own order; Sync takes the
		// changed schedules by name whatever it is.
		r := rand.New(rand.NewPCG(uint64(round), 25))
		r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		return out
	}
	open := func() *sqlx.DB {
		other, err := sqldb.Open(ctx, dsn)
		require.NoError(t, err)
		t.Cleanup(func() { _ = other.Close() })
		return other.DB
	}
	syncer, err := schedule.Open(ctx, db.DB, func(context.Context, *sqlx.Tx, schedule.Run) error { return nil }, schedule.WithClock(clock))
	require.NoError(t, err)
	_, err = syncer.Sync(ctx, defs(0)...)
	require.NoError(t, err)
	var processors []*todolist.Processor
	for range 2 {
		s, err := schedule.Open(ctx, open(), func(context.Context, *sqlx.Tx, schedule.Run) error { return nil }, schedule.WithClock(clock))
		require.NoError(t, err)
		// Small batches, so that the processors take and write items
		// all along the Sync instead of in one go before it.
		p, err := s.Processor(todolist.WithBatchSize(25))
		require.NoError(t, err)
		processors = append(processors, p)
	}

	const rounds = 6
	var errs []error
	for round := 1; round <= rounds; round++ {
		clock.Advance(time.Minute) // every schedule's slot has come
		var mu sync.Mutex
		var wg sync.WaitGroup
		fail := func(who string, err error) {
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("round %d, %s: %w", round, who, err))
				mu.Unlock()
			}
		}
		wg.Go(func() {
			_, err := syncer.Sync(ctx, defs(round)...)
			fail("sync", err)
		})
		for i, p := range processors {
			wg.Go(func() {
				_, err := p.Process(ctx, clock.Now())
				fail(fmt.Sprintf("processor %d", i+1), err)
			})
		}
		wg.Wait()
	}
	for _, err := range errs {
		require.NotContains(t, err.Error(), "deadlock detected", "SQLSTATE 40P01")
		require.NotContains(t, err.Error(), "40P01")
	}
	require.NoError(t, errors.Join(errs...))

	// Each minute's slot of each schedule fired once, or Sync reprogrammed
	// the schedule before it fired and counted the slot skipped.
	states, err := syncer.List(ctx)
	require.NoError(t, err)
	require.Len(t, states, n)
	var runs []struct {
		Schedule string `db:"schedule"`
		Runs     int64  `db:"runs"`
		Distinct int64  `db:"distinct_slots"`
	}
	require.NoError(t, db.SelectContext(ctx, &runs, `SELECT schedule, COUNT(*) AS runs, COUNT(DISTINCT slot) AS distinct_slots FROM schedule_runs GROUP BY schedule`))
	recorded := map[string]int64{}
	for _, r := range runs {
		require.Equal(t, r.Runs, r.Distinct, "%s: a slot ran twice", r.Schedule)
		recorded[r.Schedule] = r.Runs
	}
	fired, skipped := int64(0), int64(0)
	for _, st := range states {
		require.Equal(t, recorded[st.Name], st.Runs, "%s: runs recorded and counted", st.Name)
		require.EqualValues(t, rounds, st.Runs+st.Skipped, "%s: %d runs and %d skipped of %d slots", st.Name, st.Runs, st.Skipped, rounds)
		fired, skipped = fired+st.Runs, skipped+st.Skipped
	}
	t.Logf("%d slots: %d fired, %d skipped by a Sync that reprogrammed their schedule first", n*rounds, fired, skipped)
}

// Two processes that start at once and Sync the same changed schedules,
// declared in different orders, wait for each other instead of
// deadlocking on PostgreSQL: Sync takes the changed schedules in name
// order, whatever the order declared.
func TestTwoSyncsChangingTheSameSchedulesInDifferentOrdersDoNotDeadlock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, dsn := sqldbtest.Postgres(t)
	other, err := sqldb.Open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close() })
	start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(start)
	specs := []schedule.Spec{
		mustSpec(t)(schedule.Cron("* * * * *", nil)),
		mustSpec(t)(schedule.Every(time.Minute, start)),
	}
	defs := func(spec int, seed uint64) []schedule.Definition {
		out := make([]schedule.Definition, 1000)
		for i := range out {
			out[i] = schedule.Definition{Name: fmt.Sprintf("s%04d", i), Spec: specs[spec], Command: "poll"}
		}
		r := rand.New(rand.NewPCG(seed, 25))
		r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		return out
	}
	none := func(context.Context, *sqlx.Tx, schedule.Run) error { return nil }
	a, err := schedule.Open(ctx, db.DB, none, schedule.WithClock(clock))
	require.NoError(t, err)
	b, err := schedule.Open(ctx, other.DB, none, schedule.WithClock(clock))
	require.NoError(t, err)
	_, err = a.Sync(ctx, defs(0, 0)...)
	require.NoError(t, err)
	for round := 1; round <= 3; round++ {
		var wg sync.WaitGroup
		var errA, errB error
		wg.Go(func() { _, errA = a.Sync(ctx, defs(round%2, uint64(round))...) })
		wg.Go(func() { _, errB = b.Sync(ctx, defs(round%2, uint64(round+100))...) })
		wg.Wait()
		require.NoError(t, errors.Join(errA, errB), "round %d", round)
		states, err := a.List(ctx)
		require.NoError(t, err)
		for _, st := range states {
			require.Equal(t, specs[round%2].String(), st.Spec, "%s: round %d's spec", st.Name, round)
		}
	}
}
