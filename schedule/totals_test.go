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

// ReadTotals sums in one statement what the handler saw fired and what
// ReadSchedules reads schedule by schedule.
func TestReadTotalsSumsWhatFiredAndWhatIsStored(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			totals, err := schedule.ReadTotals(ctx, db.DB)
			require.NoError(t, err)
			require.Zero(t, totals, "no tables: nothing, and nothing created")
			has, err := schedule.HasState(ctx, db.DB)
			require.NoError(t, err)
			require.False(t, has)

			start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
			clock := clockwork.NewFakeClockAt(start)
			rec := &recorder{}
			n := newNode(t, db.DB, clock, rec)
			_, err = n.s.Sync(ctx,
				schedule.Definition{Name: "hourly", Spec: mustSpec(t)(schedule.Cron("0 * * * *", nil)), Command: "report"},
				schedule.Definition{Name: "half", Spec: mustSpec(t)(schedule.Cron("30 * * * *", nil)), Command: "sync",
					CatchUp: tick.Skip{}},
				schedule.Definition{Name: "paused", Spec: mustSpec(t)(schedule.Cron("@daily", nil)), Command: "x"})
			require.NoError(t, err)
			require.NoError(t, n.s.Pause(ctx, "paused"))
			for range 3 {
				clock.Advance(time.Hour)
				n.process(t, clock)
			}
			clock.Advance(5 * time.Hour) // missed: "half" skips them, "hourly" fires the latest
			n.process(t, clock)

			totals, err = schedule.ReadTotals(ctx, db.DB)
			require.NoError(t, err)
			stored, err := schedule.ReadSchedules(ctx, db.DB)
			require.NoError(t, err)
			want := schedule.Totals{Schedules: int64(len(stored))}
			for _, s := range stored {
				want.Runs += s.Runs
				want.Skipped += s.Skipped
				if s.Paused {
					want.Paused++
				}
			}
			require.Equal(t, want, totals)
			require.Equal(t, int64(len(rec.runs)), totals.Runs, "the runs the handler saw")
			require.Equal(t, schedule.Totals{Schedules: 3, Paused: 1, Runs: totals.Runs, Skipped: totals.Skipped}, totals)
			require.Positive(t, totals.Skipped)
		})
	}
}
