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

// Pruning deletes the finished runs before a time, of every schedule, and
// nothing else: later runs and a run left open stay, the plan goes on
// without firing a pruned slot again, and only Backfill, asked for a
// pruned range, runs its slots again. The expected counts come from the
// handler's own record of the runs, not from the runs table.
func TestPruneRunsDeletesFinishedRunsBeforeATimeOnly(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
			clock := clockwork.NewFakeClockAt(start)
			rec := &recorder{fail: func(r schedule.Run) error {
				if r.Schedule == "slow" {
					return schedule.ErrStillRunning // its first run stays open
				}
				return nil
			}}
			n := newNode(t, db.DB, clock, rec)
			_, err := n.s.Sync(ctx,
				schedule.Definition{Name: "minutely", Spec: mustSpec(t)(schedule.Cron("* * * * *", nil))},
				schedule.Definition{Name: "quarterly", Spec: mustSpec(t)(schedule.Cron("*/15 * * * *", nil))},
				schedule.Definition{Name: "slow", Spec: mustSpec(t)(schedule.Every(time.Hour, start)), Overlap: schedule.SkipOverlap},
			)
			require.NoError(t, err)
			for range 180 {
				clock.Advance(time.Minute)
				n.process(t, clock)
			}

			// Half a minute past a slot: a slot at the cutoff itself would
			// not tell "before" from "at or before".
			cutoff := start.Add(2*time.Hour + 30*time.Second)
			want := 0
			for _, name := range []string{"minutely", "quarterly"} {
				for _, slot := range rec.slots(name) {
					if slot.Before(cutoff) {
						want++
					}
				}
			}
			require.Greater(t, want, 7*3, "enough runs for several chunks")
			pruned, err := schedule.PruneRunsInChunks(ctx, n.s, cutoff, 7)
			require.NoError(t, err)
			require.EqualValues(t, want, pruned)

			for _, name := range []string{"minutely", "quarterly"} {
				runs, err := schedule.ReadRuns(ctx, db, name, schedule.MaxRunsRead)
				require.NoError(t, err)
				var kept []time.Time
				for _, slot := range rec.slots(name) {
					if !slot.Before(cutoff) {
						kept = append(kept, slot)
					}
				}
				require.Len(t, runs, len(kept), name)
				for _, r := range runs {
					require.False(t, r.Slot.Before(cutoff), "%s: run of %s kept", name, r.Slot)
				}
			}
			open, err := schedule.ReadRuns(ctx, db, "slow", schedule.MaxRunsRead)
			require.NoError(t, err)
			require.Len(t, open, 1, "the open run stays, however old its slot")
			require.Equal(t, "running", open[0].Outcome())

			fired := len(rec.slots("minutely"))
			clock.Advance(time.Minute)
			n.process(t, clock)
			require.Len(t, rec.slots("minutely"), fired+1, "the plan goes on, one slot a minute")
			require.True(t, rec.slots("minutely")[fired].Equal(clock.Now()))

			again, err := n.s.PruneRuns(ctx, cutoff)
			require.NoError(t, err)
			require.Zero(t, again, "pruning twice deletes nothing twice")

			backfilled, err := n.s.Backfill(ctx, "quarterly", start, start.Add(time.Hour))
			require.NoError(t, err)
			require.Len(t, backfilled, 4, "a pruned slot is forgotten: Backfill runs it again")

			_, err = n.s.PruneRuns(ctx, clock.Now().Add(time.Second))
			require.ErrorContains(t, err, "is in the future")
		})
	}
}
