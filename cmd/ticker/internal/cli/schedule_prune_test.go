package cli_test

import (
	"testing"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
)

// prune deletes the recorded runs whose slot is before --before, or older
// than --older-than; a pruned slot is forgotten, so a backfill over it
// runs it again.
func TestSchedulePruneDeletesRunsBeforeATime(t *testing.T) {
	t.Parallel()
	for engine, db := range databases(t) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			clock := clockwork.NewFakeClockAt(start) // 12:00:30
			sched := scheduleOn(t, clock, db)
			ok(t, sched("add", "--name", "poll", "--spec", "@every 10m", "--command", "poll-inbox"))
			backfill := func() map[string]int {
				return slotIDs(pickRuns(t, ok(t, sched("backfill", "poll", "--from", "2026-11-21T10:55:00Z", "--to", "2026-11-21T11:30:00Z")), false))
			}
			require.Len(t, backfill(), 4, "11:00, 11:10, 11:20, 11:30")

			pruned := sched("prune", "--before", "2026-11-21T12:15", "--tz", "Europe/Warsaw")
			require.Equal(t, "pruned 2 runs with a slot before 2026-11-21T12:15:00+01:00\n", ok(t, pruned))
			require.Equal(t, map[string]int{"poll@2026-11-21T11:00:00Z": 1, "poll@2026-11-21T11:10:00Z": 1}, backfill(), "the pruned slots, forgotten, run again")

			// 12:00:30 less an hour: the run of 11:00 only.
			require.Equal(t, "pruned 1 run with a slot before 2026-11-21T11:00:30Z\n", ok(t, sched("prune", "--older-than", "1h")))
			require.Equal(t, "pruned 0 runs with a slot before 2026-11-21T11:00:30Z\n", ok(t, sched("prune", "--older-than", "1h")))
		})
	}
}
