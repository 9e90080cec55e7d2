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
