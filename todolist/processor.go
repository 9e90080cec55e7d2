package todolist

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/tick"
)

// Processor works the due items of one list whenever time passes. Build one
// with [NewProcessor] (or [Handle] for the bus handler directly).
//
// Several processors, in one process or on several machines, may work the
// same list at once: each batch is claimed with a lease, renewed while its
// actions run, so no item is worked by two at the same moment — provided
// their clocks agree and each keeps its lease (see [WithLease] and the
// package documentation, Leases). A Processor is safe for concurrent use.
type Processor struct {
	list *List
	// drv runs the processor's statements in which the databases differ:
	// claims, leases and settles.
	drv  batchDriver
	kind actionKind
	cfg  processorConfig
}

// actionKind is how a processor decides its items, picked once by its
// constructor: an [Action] per item (perItem), a [BatchAction] per claimed
// batch (perBatch), or a [TxBatchAction] per batch in the transaction that
// takes it (perTxBatch).
type actionKind interface {
	// process works the items due at res.Cutoff, batch after batch,
	// until none is left or the budget is spent. drained reports that
	// its last pick took every ready item no other worker held, so that
	// nothing is left behind to count as backlog.
	process(ctx context.Context, p *Processor, start time.Time, res *Result) (drained bool, err error)
	// concurrent reports whether a tick may work several batches at once
	// ([WithWorkers]).
	concurrent() bool
}

func newProcessor(list *List, kind actionKind, opts []ProcessorOption) (*Processor, error) {
	cfg := defaultConfig()
	cfg.clock = list.clock
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(&cfg); err != nil {
			return nil, fmt.Errorf("todolist: new processor for %q: %w", list.name, err)
		}
	}
	if cfg.workers > 1 && !kind.concurrent() {
		return nil, fmt.Errorf("todolist: new processor for %q: %w", list.name, invalid("WithWorkers", "workers %d: only a transactional batch processor works batches at once", cfg.workers))
	}
	return &Processor{list: list, drv: newDriver(list.db), kind: kind, cfg: cfg}, nil
}

// Handler returns p's handler for passage-of-time events of type E: each
// event runs [Processor.Process] for the event's boundary. It returns an
// error only when the list could not be worked (storage failed, ctx ended);
// failed actions are recorded on their items and reported to the observer.
func Handler[E tick.Event](p *Processor) func(context.Context, E) error {
	return func(ctx context.Context, e E) error {
		_, err := p.Process(ctx, e.Boundary())
		return err
	}
}

// Process works the items due at boundary, in batches, until none is left or
// the budget is spent, and returns what it did.
//
// Items due at or before boundary are taken, not those due by the clock's
// now: a tick stands for the boundary that passed, so a catch-up event for a
// past minute takes what was due then, and the same event handled twice
// takes the same items. The boundary is capped by the processor's clock, so
// a ticker whose clock runs ahead makes nothing due early; leases and backoff
// are measured by the processor's clock.
//
// Cancelling ctx abandons the batch in flight, as a crash would: its claims
// lapse after the lease and the items are worked again — except those whose
// action already returned nil, which are removed first (with a short
// timeout of their own).
func (p *Processor) Process(ctx context.Context, boundary time.Time) (Result, error) {
	if err := validateTime("boundary", boundary); err != nil {
		return Result{}, fmt.Errorf("todolist: process %q: %w", p.list.name, err)
	}
	start := p.cfg.clock.Now()
	cutoff := boundary
	if start.Before(cutoff) {
		cutoff = start
	}
	res := Result{Cutoff: cutoff}
	drained, err := p.kind.process(ctx, p, start, &res)
	if err != nil {
		return res, err
	}
	// Counted on every tick a budget stopped, and on every tick of a
	// claiming processor: rows that changed under a claim can be left
	// behind by a tick that ran dry. A transactional tick that ran dry
	// left nothing: its last pick took every ready row no other
	// transaction held, and those are being worked.
	if !drained {
		if err := p.countBacklog(ctx, &res); err != nil {
			return res, err
		}
	}
	if p.cfg.observer.Tick != nil {
		p.cfg.observer.Tick(p.list.name, res)
	}
	return res, nil
}

// nextLimit is how many items the next batch of a tick may take, the
// tick having claimed so many: none once it took its maximum or spent its
// time budget.
func (p *Processor) nextLimit(start time.Time, claimed int) int {
	limit := p.cfg.batchSize
	if p.cfg.maxItems > 0 {
		limit = min(limit, p.cfg.maxItems-claimed)
	}
	if p.overTime(start) && claimed > 0 {
		return 0
	}
	return limit
}

func (p *Processor) overTime(start time.Time) bool {
	return p.cfg.timeBudget > 0 && p.cfg.clock.Since(start) >= p.cfg.timeBudget
}

// sortBatch orders a batch as it is worked: earliest due first, then by
// ID.
func sortBatch(batch []claimed) {
	slices.SortFunc(batch, func(a, b claimed) int {
		return cmp.Or(a.Due.Compare(b.Due), strings.Compare(a.ID, b.ID))
	})
}

// backoff is the wait after the given number of failed attempts: the base,
// doubled for each attempt after the first, capped (before doubling, so
// that it never overflows).
func (p *Processor) backoff(attempts int) time.Duration {
	d, ceiling := p.cfg.backoffBase, p.cfg.backoffMax
	for i := 1; i < attempts && d < ceiling; i++ {
		if d > ceiling/2 {
			return ceiling
		}
		d *= 2
	}
	return min(d, ceiling)
}

func (p *Processor) countBacklog(ctx context.Context, res *Result) error {
	l := p.list
	now := sqldb.EncodeTime(p.cfg.clock.Now())
	n, err := p.drv.backlog(ctx, l.db, readyItems{list: l.name, cutoff: sqldb.EncodeTime(res.Cutoff), now: now})
	if err != nil {
		return fmt.Errorf("todolist: count backlog of %q: %w", l.name, err)
	}
	res.Backlog = n
	return nil
}

// failedAttempt is it after a failed attempt at now: its attempts, error,
// next attempt and whether it is parked.
func (p *Processor) failedAttempt(it Item, actErr error, now time.Time) Item {
	it.Attempts++
	it.LastError = errorText(actErr)
	it.Parked = it.Attempts >= p.cfg.maxAttempts
	it.Claimed = false
	it.NextAttempt = now.Add(p.backoff(it.Attempts))
	if it.NextAttempt.After(maxTime) {
		// The latest instant the storage holds: near the year 2262 a
		// long backoff would otherwise wrap around to the past.
		it.NextAttempt = maxTime
	}
	return it
}
