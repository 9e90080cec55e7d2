package todolist

import (
	"fmt"
	"time"

	"github.com/jonboulle/clockwork"
)

// Defaults of a [Processor]; the options below override them.
const (
	DefaultBatchSize   = 1000
	DefaultLease       = 5 * time.Minute
	DefaultMaxAttempts = 10
	DefaultBackoffBase = time.Minute
	DefaultBackoffMax  = time.Hour
	DefaultTimeBudget  = 30 * time.Second
	// MaxBatchSize bounds a batch: its IDs travel as one statement's
	// parameters, which both engines limit.
	MaxBatchSize = 10000
)

// ProcessorOption configures a [Processor]. An option with an unusable value
// makes [NewProcessor] fail with [ErrInvalidOption].
type ProcessorOption func(*processorConfig) error

type processorConfig struct {
	clock       clockwork.Clock
	batchSize   int
	lease       time.Duration
	maxAttempts int
	backoffBase time.Duration
	backoffMax  time.Duration
	maxItems    int
	timeBudget  time.Duration
	workers     int
	observer    Observer
	// renewed, for tests, is told the answer of every lease renewal.
	renewed func(held bool, err error)
}

func defaultConfig() processorConfig {
	return processorConfig{
		batchSize:   DefaultBatchSize,
		lease:       DefaultLease,
		maxAttempts: DefaultMaxAttempts,
		backoffBase: DefaultBackoffBase,
		backoffMax:  DefaultBackoffMax,
		timeBudget:  DefaultTimeBudget,
		workers:     1,
	}
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidOption}, args...)...)
}

// WithClock sets the clock that leases, backoff and the time budget are
// measured with (default: the list's clock, see [WithListClock]). Tests
// pass a fake clock.
func WithClock(c clockwork.Clock) ProcessorOption {
	return func(cfg *processorConfig) error {
		if c == nil {
			return invalid("clock must not be nil")
		}
		cfg.clock = c
		return nil
	}
}

// WithBatchSize sets how many items one statement claims (default
// [DefaultBatchSize], at most [MaxBatchSize]). Larger batches mean fewer
// round trips; at most one batch of items is held in memory.
func WithBatchSize(n int) ProcessorOption {
	return func(cfg *processorConfig) error {
		if n < 1 || n > MaxBatchSize {
			return invalid("batch size %d, want 1–%d", n, MaxBatchSize)
		}
		cfg.batchSize = n
		return nil
	}
}

// WithLease sets how long a claim holds its items without a renewal
// (default [DefaultLease]). While a batch's actions run, the processor
// renews the lease every third of it, so actions may take longer than the
// lease; if the processor dies, its items come back to the list when the
// lease ends. A processor starts no item once its lease is lost or less
// than a third of it is left, and writes no outcome once it is lost (see
// the package documentation, Leases): a shorter lease brings a dead
// processor's items back sooner, at the cost of a renewal per third of it
// and less slack for a processor that stalls or loses its database.
func WithLease(d time.Duration) ProcessorOption {
	return func(cfg *processorConfig) error {
		if d <= 0 {
			return invalid("lease %v, must be positive", d)
		}
		cfg.lease = d
		return nil
	}
}

// WithMaxAttempts sets after how many failed attempts an item is parked
// (default [DefaultMaxAttempts]).
func WithMaxAttempts(n int) ProcessorOption {
	return func(cfg *processorConfig) error {
		if n < 1 {
			return invalid("max attempts %d, must be at least 1", n)
		}
		cfg.maxAttempts = n
		return nil
	}
}

// MaxBackoff is the longest backoff [WithBackoff] accepts: ten years.
const MaxBackoff = 10 * 365 * 24 * time.Hour

// WithBackoff sets the wait after a failure: base after the first, doubling
// with each further failure, never more than ceiling (defaults
// [DefaultBackoffBase] and [DefaultBackoffMax]). The ceiling is at most
// [MaxBackoff].
func WithBackoff(base, ceiling time.Duration) ProcessorOption {
	return func(cfg *processorConfig) error {
		if base <= 0 || ceiling < base {
			return invalid("backoff base %v, ceiling %v: want 0 < base ≤ ceiling", base, ceiling)
		}
		if ceiling > MaxBackoff {
			return invalid("backoff ceiling %v is longer than %v (ten years)", ceiling, MaxBackoff)
		}
		cfg.backoffBase, cfg.backoffMax = base, ceiling
		return nil
	}
}

// WithMaxItems caps how many items one tick claims (default: no cap). What
// is left is taken by the next tick and reported as [Result.Backlog].
func WithMaxItems(n int) ProcessorOption {
	return func(cfg *processorConfig) error {
		if n < 1 {
			return invalid("max items per tick %d, must be at least 1", n)
		}
		cfg.maxItems = n
		return nil
	}
}

// WithTimeBudget caps how long one tick works (default [DefaultTimeBudget];
// 0 removes the cap). The budget is checked before each item, and each tick
// works at least one item, so a tick may overrun by one action; items
// claimed but not started are released for the next tick at once.
func WithTimeBudget(d time.Duration) ProcessorOption {
	return func(cfg *processorConfig) error {
		if d < 0 {
			return invalid("time budget %v, must not be negative", d)
		}
		cfg.timeBudget = d
		return nil
	}
}

// MaxWorkers bounds [WithWorkers]: each worker holds a connection and a
// transaction open for as long as it works.
const MaxWorkers = 64

// WithWorkers sets how many batches of a transactional batch processor
// ([NewTxBatchProcessor]) a tick works at once, each in a transaction of
// its own (default 1). On PostgreSQL the batches take disjoint items (FOR
// UPDATE SKIP LOCKED) and their writes overlap, so a tick of many due
// items ends sooner as long as the server has cores to spare; on SQLite
// the transactions take turns on the one write lock, and more workers add
// nothing. The observer is then called from several goroutines at once.
// The other processors work a tick's batches one after another: run
// several of them instead (see the package documentation, Several
// processors), and they reject the option.
func WithWorkers(n int) ProcessorOption {
	return func(cfg *processorConfig) error {
		if n < 1 || n > MaxWorkers {
			return invalid("workers %d, must be between 1 and %d", n, MaxWorkers)
		}
		cfg.workers = n
		return nil
	}
}

// WithObserver sets the hooks told about each item and each tick, e.g. to
// export metrics.
func WithObserver(o Observer) ProcessorOption {
	return func(cfg *processorConfig) error {
		cfg.observer = o
		return nil
	}
}

// Observer is told what a [Processor] does. Every field is optional. Hooks
// run on the processing goroutine, between items, so they should be quick;
// with several processors they run concurrently.
type Observer struct {
	// Done is called when an item's action returned nil (the item is then
	// removed, unless it was re-added, removed or re-claimed meanwhile).
	Done func(list string, item Item)
	// Failed is called when an action failed and the item will be retried;
	// item carries the new attempt count, error and next attempt — when
	// it may be claimed again, which a failure written means it will be:
	// it has left its batch's claim.
	Failed func(list string, item Item, err error)
	// Parked is called when an action failed for the last allowed time and
	// the item was parked.
	Parked func(list string, item Item, err error)
	// LeaseLost is called when a batch's lease was lost: it ran out
	// before the batch was settled (renewals failed or came too late), or
	// a renewal found the claim lapsed or taken by another processor. err
	// wraps [ErrLeaseLost] and says which. The batch started nothing
	// more, and its outcomes not yet written were dropped (see
	// [Result.LeasesLost]).
	LeaseLost func(list string, err error)
	// Tick is called at the end of each tick that did not fail, with its
	// counts, including the backlog it left.
	Tick func(list string, r Result)
}
