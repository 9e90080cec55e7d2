package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// DefaultRetention is how long a record every sink has passed is kept
// when the caller does not say (ticker run's --outbox-retention): a week,
// long enough to look into what a receiver got last weekend, to take a
// new sink's history from (FromInstant), or to see a parked record
// before it goes.
const DefaultRetention = 7 * 24 * time.Hour

// Pruning's pace: a batch is one short statement, and after each the
// pruner rests pruneRest times as long as the batch took (at least
// pruneMinRest), so that it takes at most a fifth of the database's
// time whatever the database is: delivery and the writers go on between
// batches, and a database writing one statement at a time (SQLite) lets
// theirs through.
const (
	defaultPruneBatch = 1000
	pruneRest         = 4
	pruneMinRest      = time.Millisecond
	defaultPruneEvery = time.Minute
)

// WithPruneBatch sets how many records one pruning statement deletes at
// most (default 1,000): a bound on how long it holds the rows (or, on
// SQLite, the database's one writer lock; a few milliseconds to tens of
// them). Smaller batches cost more per record: a batch rewrites an index
// page per stream it touches, whatever the number of records it deletes
// from it.
func WithPruneBatch(n int) Option {
	return func(o *Outbox) error {
		if n < 1 || n > 100_000 {
			return fmt.Errorf("%w: WithPruneBatch(%d): 1 to 100000", ErrInvalidOption, n)
		}
		o.pruneBatch = n
		return nil
	}
}

// WithPruneEvery sets how often RunPruner looks for records to prune
// (default one minute), on the outbox's clock.
func WithPruneEvery(d time.Duration) Option {
	return func(o *Outbox) error {
		if d <= 0 {
			return fmt.Errorf("%w: WithPruneEvery(%v): must be positive", ErrInvalidOption, d)
		}
		o.pruneEvery = d
		return nil
	}
}

// Prune deletes the records that every sink has passed (taken or parked)
// and that were recorded more than olderThan ago, by the outbox's clock,
// and returns how many it deleted. A sink the outbox knows (a relay of it
// ever started, or it has refusals stored) counts until ForgetSink
// forgets it: a record beyond any sink's checkpoint is never pruned, so
// a sink whose relay stopped for good holds every later record back.
// With no sink known, nothing is pruned.
//
// Only the sinks' checkpoints count, not the streams' that Run moves
// first: a record a stream's checkpoint passed while the sink's waits
// for another stream's stalled record is pruned once that record is
// taken or parked. Since every checkpoint stands below PostgreSQL's
// horizon, nothing a late transaction could still precede is pruned.
// Parked records go too: Parked lists them for the retention.
//
// It deletes in batches (WithPruneBatch), each its own short statement,
// resting between them four times as long as each took: it never holds
// what the relays and writers wait on for more than a batch, and takes
// at most about a fifth of the database's time. It returns once nothing
// more is to be pruned, or with ctx's error when ctx ends (what it
// deleted by then stays deleted).
func (o *Outbox) Prune(ctx context.Context, olderThan time.Duration) (int, error) {
	if olderThan < 0 {
		return 0, fmt.Errorf("%w: Prune: retention %v is negative", ErrInvalidArgument, olderThan)
	}
	n, err := o.prune(ctx, o.clock.Now().Add(-olderThan))
	if err != nil {
		return n, fmt.Errorf("outbox: prune the records older than %v: %w", olderThan, err)
	}
	return n, nil
}

// prune deletes what every sink passed recorded before cutoff. The
// bound is read once: checkpoints only move forward, so it stays safe.
func (o *Outbox) prune(ctx context.Context, cutoff time.Time) (int, error) {
	if err := sqldb.CheckTime(cutoff); err != nil {
		return 0, err
	}
	bound, ok, err := o.d.pruneBound(ctx)
	if err != nil || !ok {
		return 0, wrapIf("read the sinks' checkpoints", err)
	}
	before := sqldb.EncodeTime(cutoff)
	total, from := 0, position{}
	for {
		began := time.Now()
		n, last, err := o.d.prune(ctx, from, bound, before, o.pruneBatch)
		if err != nil {
			return total, fmt.Errorf("delete a batch after (%d, %d): %w", from.Tx, from.ID, err)
		}
		total += n
		o.ins.prunedRecords(ctx, n)
		if n < o.pruneBatch {
			break
		}
		from = last
		rest := time.NewTimer(max(pruneRest*time.Since(began), pruneMinRest))
		select {
		case <-ctx.Done():
			rest.Stop()
			return total, ctx.Err()
		case <-rest.C:
		}
	}
	if total > 0 {
		if err := o.d.sweepAttempts(ctx); err != nil {
			return total, fmt.Errorf("delete the refusals of pruned records: %w", err)
		}
	}
	return total, nil
}

// RunPruner prunes in the background until ctx ends, and returns ctx's
// error: at once, then every WithPruneEvery (a minute by default) on the
// outbox's clock, each time as Prune(ctx, olderThan) does. A failure is
// told to onError (if not nil) and tried again at the next turn. One
// pruner per database is enough; several delete the same batches, the
// second finding them gone.
func (o *Outbox) RunPruner(ctx context.Context, olderThan time.Duration, onError func(error)) error {
	if olderThan < 0 {
		return fmt.Errorf("%w: RunPruner: retention %v is negative", ErrInvalidArgument, olderThan)
	}
	for {
		if _, err := o.Prune(ctx, olderThan); err != nil && ctx.Err() == nil && onError != nil {
			onError(err)
		}
		t := o.clock.NewTimer(o.pruneEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.Chan():
		}
	}
}

// ForgetSink forgets sink: its checkpoints and its refusals (its parked
// records are no longer listed as its). Pruning no longer waits for it,
// and a relay of it starts again as a new sink (WithFrom). For a sink
// taken out of service for good; a relay of it still running stores its
// checkpoints again.
func (o *Outbox) ForgetSink(ctx context.Context, sink string) error {
	if sink == "" {
		return fmt.Errorf("%w: ForgetSink: empty sink name", ErrInvalidArgument)
	}
	if err := o.d.forget(ctx, sink); err != nil {
		return fmt.Errorf("outbox: forget sink %q: %w", sink, err)
	}
	return nil
}

// wrapIf wraps err saying what was being done, nil staying nil.
func wrapIf(doing string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", doing, err)
}
