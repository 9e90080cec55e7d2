package schedule_test

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/schedule"
)

// Backfill runs a schedule's slots only: none after its Until.
func TestBackfillStopsAtUntil(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
			clock := clockwork.NewFakeClockAt(start)
			n := newNode(t, db.DB, clock, &recorder{})
			hourly := mustSpec(t)(schedule.Cron("0 * * * *", nil))
			until := start.Add(2*time.Hour + 30*time.Minute)
			_, err := n.s.Sync(ctx, schedule.Definition{Name: "ends", Spec: hourly, Until: until})
			require.NoError(t, err)
			clock.Advance(5 * time.Hour)
			n.process(t, clock) // latest only: fires 02:00, the last slot before Until
			equalInstants(t, []time.Time{start.Add(2 * time.Hour)}, n.rec.slots("ends"), "the plan stops at Until")

			runs, err := n.s.Backfill(ctx, "ends", start.Add(-time.Hour), clock.Now())
			require.NoError(t, err)
			var got []time.Time
			for _, r := range runs {
				got = append(got, r.Slot)
			}
			equalInstants(t, []time.Time{start, start.Add(time.Hour)}, got, "00:00 and 01:00; not 03:00, 04:00 or 05:00, after Until")
		})
	}
}

// Backfill is asked for by name, as Trigger is: it runs a paused
// schedule's missing slots too, and pausing stays as it was.
func TestBackfillRunsAPausedSchedule(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := sqldbtest.SQLite(t)
	start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(start)
	n := newNode(t, db.DB, clock, &recorder{})
	hourly := mustSpec(t)(schedule.Cron("0 * * * *", nil))
	_, err := n.s.Sync(ctx, schedule.Definition{Name: "paused", Spec: hourly})
	require.NoError(t, err)
	require.NoError(t, n.s.Pause(ctx, "paused"))
	clock.Advance(2*time.Hour + time.Minute)
	n.process(t, clock)
	require.Empty(t, n.rec.slots("paused"), "a paused schedule does not fire")

	runs, err := n.s.Backfill(ctx, "paused", start, clock.Now())
	require.NoError(t, err)
	var got []time.Time
	for _, r := range runs {
		got = append(got, r.Slot)
	}
	equalInstants(t, []time.Time{start.Add(time.Hour), start.Add(2 * time.Hour)}, got, "the slots in (00:00, 02:01]")
	equalInstants(t, got, n.rec.slots("paused"), "the handler ran each")
	states, err := n.s.List(ctx)
	require.NoError(t, err)
	require.True(t, states[0].Paused, "still paused")
	clock.Advance(time.Hour)
	n.process(t, clock)
	require.Len(t, n.rec.slots("paused"), 2, "and still not firing")
}
