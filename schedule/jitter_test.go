package schedule_test

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/tick"
)

// A catch-up whose next slot is due before the item the processor holds
// (jitter, or Finish pulling the item to now) re-adds the schedule: it
// never vanishes from the to-do list.
func TestACatchUpWithJitterKeepsTheScheduleAlive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(start)
	db, _ := sqldbtest.SQLite(t)
	n := newNode(t, db.DB, clock, &recorder{})
	every := mustSpec(t)(schedule.Cron("* * * * *", nil))
	_, err := n.s.Sync(ctx, schedule.Definition{Name: "m", Spec: every, CatchUp: tick.All{Window: time.Hour, Max: 100}, Jitter: 5 * time.Minute})
	require.NoError(t, err)
	for range 120 {
		clock.Advance(time.Minute)
		for range 3 {
			n.process(t, clock)
		}
	}
	_, err = n.s.ToDo().Get(ctx, "m")
	require.NoError(t, err, "the schedule still has its next slot")
	require.GreaterOrEqual(t, len(n.rec.slots("m")), 110, "every slot whose jittered time came fired")
}

// Jitter smaller than the spacing of the slots delays them; it does not
// make the catch-up planner take them for missed.
func TestJitterIsNotMistakenForMissedSlots(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(start)
	db, _ := sqldbtest.SQLite(t)
	n := newNode(t, db.DB, clock, &recorder{})
	for _, policy := range []tick.CatchUp{tick.LatestOnly{}, tick.Skip{}} {
		name := map[bool]string{true: "latest", false: "skip"}[policy == tick.CatchUp(tick.LatestOnly{})]
		_, err := n.s.Sync(ctx, schedule.Definition{Name: name, Spec: mustSpec(t)(schedule.Cron("*/5 * * * *", nil)), CatchUp: policy, Jitter: 4 * time.Minute})
		require.NoError(t, err)
	}
	for range 24 * 60 {
		clock.Advance(time.Minute)
		n.process(t, clock)
	}
	states, err := n.s.List(ctx)
	require.NoError(t, err)
	for _, st := range states {
		require.Zero(t, st.Skipped, st.Name)
		require.GreaterOrEqual(t, len(n.rec.slots(st.Name)), 24*12-1, st.Name)
	}
}
