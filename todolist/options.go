package todolist

import (
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
	untilDry    bool
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

// WithClock sets the clock that leases, backoff and the time budget are
// measured with (default: the list's clock, see [WithListClock]). Tests
// pass a fake clock.
func WithClock(c clockwork.Clock) ProcessorOption {
	return func(cfg *processorConfig) error {
		if c == nil {
			return invalid("WithClock", "the clock must not be nil")
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
			return invalid("WithBatchSize", "batch size %d, want 1–%d", n, MaxBatchSize)
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
			return invalid("WithLease", "lease %v, must be positive", d)
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
			return invalid("WithMaxAttempts", "max attempts %d, must be at least 1", n)
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
			return invalid("WithBackoff", "backoff base %v, ceiling %v: want 0 < base ≤ ceiling", base, ceiling)
		}
		if ceiling > MaxBackoff {
			return invalid("WithBackoff", "backoff ceiling %v is longer than %v (ten years)", ceiling, MaxBackoff)
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
			return invalid("WithMaxItems", "max items per tick %d, must be at least 1", n)
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
			return invalid("WithTimeBudget", "time budget %v, must not be negative", d)
		}
		cfg.timeBudget = d
		return nil
	}
}

// WithUntilDry makes a tick keep taking batches until a pick finds
// nothing due, instead of stopping at the first pick that finds fewer
// items than it asked for. It is for actions that add an item due again
// at once — a schedule behind that fires its oldest missed slot and
// re-adds the next (schedule.Scheduler.Processor) — which a tick would
// otherwise take one step a call, so that a caller had to call Process
// again while it claimed anything. An item is taken again only after its
// action settled it; conflicts and failures are set past the cutoff, so
// they are not. An action that re-adds its item due at or before the
// cutoff every time is taken until [WithMaxItems] or [WithTimeBudget]
// stops the tick. It costs one more pick, which finds nothing, on a tick
// that claimed anything.
func WithUntilDry() ProcessorOption {
	return func(cfg *processorConfig) error {
		cfg.untilDry = true
		return nil
	}
}

// dry reports whether a pick that took taken of the limit items it asked
// for ends a tick: a short one, or with WithUntilDry an empty one.
func (cfg processorConfig) dry(taken, limit int) bool {
	if cfg.untilDry {
		return taken == 0
	}
	return taken < limit
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
			return invalid("WithWorkers", "workers %d, must be between 1 and %d", n, MaxWorkers)
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
