package schedule

import (
	"context"
	"time"
)

// PruneRunsInChunks is PruneRuns deleting chunk runs a transaction, so
// that a test sees several chunks without recording tens of thousands of
// runs.
func PruneRunsInChunks(ctx context.Context, s *Scheduler, before time.Time, chunk int) (int64, error) {
	return s.pruneRuns(ctx, before, chunk)
}
