package schedule

import (
	"context"
	"fmt"
	"time"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/timefmt"
)

// pruneChunk is how many runs one transaction of PruneRuns deletes, so
// that pruning months of runs never holds the write lock for long: firing
// waits for it on SQLite.
const pruneChunk = 10_000

// PruneRuns deletes the recorded runs, of every schedule, whose slot is
// before before, and returns how many it deleted. Nothing else deletes
// them: a run is a row, and 100,000 schedules firing every minute record
// 144 million a day.
//
// A run's record is what makes its slot fire once; a pruned slot is
// forgotten. The plan never goes back to a slot it has passed, so a
// pruned slot fires again only if Backfill is asked for it. Keep days of
// runs, not minutes: a processor whose lease ran out while its handler
// still ran is stopped from firing the slot a second time by the
// record. Runs a handler left open (ErrStillRunning) are kept whatever
// their slot: Finish and the overlap policies read them.
//
// It deletes in transactions of 10,000 runs, so firing is held up for
// one of them at a time, and a cancelled ctx keeps what was deleted so
// far (the count says how much). before must not be in the future.
func (s *Scheduler) PruneRuns(ctx context.Context, before time.Time) (int64, error) {
	return s.pruneRuns(ctx, before, pruneChunk)
}

// pruneRuns is PruneRuns, chunk runs a transaction.
func (s *Scheduler) pruneRuns(ctx context.Context, before time.Time, chunk int) (int64, error) {
	if before.After(s.clock.Now()) {
		return 0, fmt.Errorf("schedule: prune runs: %s is in the future", timefmt.Format(before))
	}
	var pruned int64
	for {
		n, err := s.driver.pruneRuns(ctx, s.db, sqldb.EncodeTime(before), chunk)
		if err != nil {
			return pruned, fmt.Errorf("schedule: prune runs before %s: %w", timefmt.Format(before), err)
		}
		pruned += n
		if n < int64(chunk) {
			return pruned, nil
		}
	}
}
