package schedule_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/tick"
)

// TestASchedulesBehindCatchUpInOneProcessCall: schedules five slots
// behind, catching up every missed slot, fire all five within one
// Process call at the boundary — in order, each once — with no loop in
// the caller; a second call at the same boundary fires nothing.
func TestASchedulesBehindCatchUpInOneProcessCall(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			start := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
			clock := clockwork.NewFakeClockAt(start)
			n := newNode(t, db.DB, clock, &recorder{})
			all := tick.All{Window: time.Hour, Max: 100}
			var defs []schedule.Definition
			for i := range 3 {
				every := mustSpec(t)(schedule.Every(time.Minute, start))
				defs = append(defs, schedule.Definition{Name: fmt.Sprintf("behind-%d", i), Spec: every, CatchUp: all})
			}
			_, err := n.s.Sync(ctx, defs...)
			require.NoError(t, err)

			clock.Advance(5 * time.Minute) // the process was away for five minutes
			res := n.process(t, clock)
			require.Equal(t, 15, res.Done, "three schedules, five slots each, in one call")
			want := []time.Time{
				start.Add(1 * time.Minute), start.Add(2 * time.Minute), start.Add(3 * time.Minute),
				start.Add(4 * time.Minute), start.Add(5 * time.Minute),
			}
			for _, d := range defs {
				equalInstants(t, want, n.rec.slots(d.Name), d.Name)
			}
			require.Zero(t, n.process(t, clock).Done, "nothing left at this boundary")
		})
	}
}
