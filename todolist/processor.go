package todolist

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/tick"
)

// Action does what an item stands for, e.g. cancel the unpaid order with
// the item's ID. It is called with the item's state as claimed.
//
// Return nil when there is nothing left to do, including when the work
// turned out to be unnecessary (the order was paid meanwhile): the item is
// removed. Return an error to retry later with backoff; the item is parked
// after too many failures. An error that has, anywhere in its chain, a
// value with a method Conflict() bool returning true (such as the event
// store's version conflict) is not a failure: the item is tried again on the
// next tick without counting an attempt. A panic counts as a failure.
//
// Items are delivered at least once: a processor that dies after the action
// but before recording the outcome leaves the item to be worked again when
// its lease ends, so actions must be idempotent — an action that decides from
// current state, as a level-triggered one does, is.
type Action func(ctx context.Context, item Item) error

// Result counts what one tick did.
type Result struct {
	// Cutoff is the due time up to which items were taken: the event's
	// boundary, or the processor's clock if that is earlier.
	Cutoff time.Time
	// Claimed counts the items claimed.
	Claimed int
	// Done counts actions that returned nil.
	Done int
	// Failed counts actions that failed and will be retried.
	Failed int
	// Parked counts actions that failed for the last allowed time.
	Parked int
	// Conflicts counts actions that hit a version conflict; they are tried
	// again on the next tick.
	Conflicts int
	// Released counts claimed items the budget left unstarted; the next
	// tick takes them.
	Released int
	// Lost counts outcomes not written because the item had changed hands
	// meanwhile: it was removed, re-added with a later due time, or
	// claimed by another processor after this one's lease ran out. The
	// item is then left as the other party left it.
	Lost int
	// Backlog counts the due items left for the next tick when the budget
	// stopped this one; 0 when the tick finished the list.
	Backlog int
}

// Processor works the due items of one list whenever time passes. Build one
// with [NewProcessor] (or [Handle] for the bus handler directly).
//
// Several processors, in one process or on several machines, may work the
// same list at once: each batch is claimed with a lease, so no item is
// worked by two at the same moment. A Processor is safe for concurrent use.
type Processor struct {
	list   *List
	action Action
	cfg    processorConfig
}

// NewProcessor returns a processor running action for the due items of list.
// Without options it claims batches of [DefaultBatchSize] with a
// [DefaultLease] lease, backs off from [DefaultBackoffBase] to
// [DefaultBackoffMax], parks after [DefaultMaxAttempts] failures and stops a
// tick after [DefaultTimeBudget].
func NewProcessor(list *List, action Action, opts ...ProcessorOption) (*Processor, error) {
	if list == nil {
		return nil, fmt.Errorf("todolist: new processor: %w", ErrNilList)
	}
	if action == nil {
		return nil, fmt.Errorf("todolist: new processor for %q: %w", list.name, ErrNilAction)
	}
	cfg := defaultConfig()
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(&cfg); err != nil {
			return nil, fmt.Errorf("todolist: new processor for %q: %w", list.name, err)
		}
	}
	return &Processor{list: list, action: action, cfg: cfg}, nil
}

// Handle returns a handler that works list's due items on every
// passage-of-time event of type E it is given, for
// bus.Subscribe(b, handler): E is tick.MinuteHasPassed for timeouts,
// tick.DayHasPassed for daily checks, or tick.Event for every unit.
func Handle[E tick.Event](list *List, action Action, opts ...ProcessorOption) (func(context.Context, E) error, error) {
	p, err := NewProcessor(list, action, opts...)
	if err != nil {
		return nil, err
	}
	return Handler[E](p), nil
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
// lapse after the lease and the items are worked again.
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
	for {
		limit := p.cfg.batchSize
		if p.cfg.maxItems > 0 {
			limit = min(limit, p.cfg.maxItems-res.Claimed)
		}
		if limit <= 0 || (p.overTime(start) && res.Claimed > 0) {
			if err := p.countBacklog(ctx, &res); err != nil {
				return res, err
			}
			break
		}
		batch, token, err := p.claim(ctx, cutoff, limit)
		if err != nil {
			return res, err
		}
		res.Claimed += len(batch)
		stopped, err := p.work(ctx, batch, token, start, &res)
		if err != nil {
			return res, err
		}
		if stopped {
			if err := p.countBacklog(ctx, &res); err != nil {
				return res, err
			}
			break
		}
		if len(batch) < limit {
			break
		}
	}
	if p.cfg.observer.Tick != nil {
		p.cfg.observer.Tick(p.list.name, res)
	}
	return res, nil
}

func (p *Processor) overTime(start time.Time) bool {
	return p.cfg.timeBudget > 0 && p.cfg.clock.Since(start) >= p.cfg.timeBudget
}

// claim takes up to limit items due at cutoff in one statement, under a
// fresh token, and returns them earliest due first.
func (p *Processor) claim(ctx context.Context, cutoff time.Time, limit int) ([]Item, string, error) {
	token := uuid.NewString()
	leaseEnd := p.cfg.clock.Now().Add(p.cfg.lease)
	l := p.list
	rows, err := l.db.QueryContext(ctx, l.q.claim,
		l.name, sqldb.EncodeTime(cutoff), limit, token, sqldb.EncodeTime(leaseEnd), l.name)
	if err != nil {
		return nil, "", fmt.Errorf("todolist: claim due items of %q: %w", l.name, err)
	}
	defer rows.Close()
	batch := make([]Item, 0, limit)
	for rows.Next() {
		it := Item{NextAttempt: leaseEnd, Claimed: true}
		var due int64
		if err := rows.Scan(&it.ID, &due, &it.Attempts, &it.LastError); err != nil {
			return nil, "", fmt.Errorf("todolist: claim due items of %q: %w", l.name, err)
		}
		it.Due = sqldb.DecodeTime(due)
		batch = append(batch, it)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("todolist: claim due items of %q: %w", l.name, err)
	}
	slices.SortFunc(batch, func(a, b Item) int {
		return cmp.Or(a.Due.Compare(b.Due), strings.Compare(a.ID, b.ID))
	})
	return batch, token, nil
}

// work runs the action for each item of a claimed batch and writes the
// outcomes set-wise: one statement removes the done items, one releases the
// conflicts, one the items the budget left unstarted; failures are written
// one by one, as each has its own attempt count. stopped reports that the
// time budget ended the tick.
func (p *Processor) work(ctx context.Context, batch []Item, token string, start time.Time, res *Result) (stopped bool, err error) {
	var done, conflicts, unstarted []string
	for i, it := range batch {
		if err := ctx.Err(); err != nil {
			return false, p.abandon(err)
		}
		started := res.Done + res.Failed + res.Parked + res.Conflicts
		if started > 0 && p.overTime(start) {
			for _, rest := range batch[i:] {
				unstarted = append(unstarted, rest.ID)
			}
			stopped = true
			break
		}
		actErr := p.run(ctx, it)
		if err := ctx.Err(); err != nil {
			// The action most likely failed because of the cancellation;
			// counting that as an attempt would punish the item.
			return false, p.abandon(err)
		}
		switch {
		case actErr == nil:
			done = append(done, it.ID)
			res.Done++
			if p.cfg.observer.Done != nil {
				p.cfg.observer.Done(p.list.name, it)
			}
		case isConflict(actErr):
			conflicts = append(conflicts, it.ID)
			res.Conflicts++
		default:
			if err := p.fail(ctx, token, it, actErr, res); err != nil {
				return false, err
			}
		}
	}
	l := p.list
	if len(done) > 0 {
		n, err := p.exec(ctx, "remove done items", `DELETE FROM todolist_items WHERE list = ? AND claim = ? AND id IN`, done, l.name, token)
		if err != nil {
			return false, err
		}
		res.Lost += len(done) - n
	}
	if len(conflicts) > 0 {
		// Released just past the cutoff: the next tick takes them, this
		// one does not spin on them.
		next := sqldb.EncodeTime(res.Cutoff) + 1
		if _, err := p.exec(ctx, "release conflicting items", `UPDATE todolist_items SET claim = '', run_at = ? WHERE list = ? AND claim = ? AND id IN`, conflicts, next, l.name, token); err != nil {
			return false, err
		}
	}
	if len(unstarted) > 0 {
		n, err := p.exec(ctx, "release unstarted items", `UPDATE todolist_items SET claim = '', run_at = due WHERE list = ? AND claim = ? AND id IN`, unstarted, l.name, token)
		if err != nil {
			return false, err
		}
		res.Released += n
	}
	return stopped, nil
}

// exec runs prefix followed by the list of ids, after args, and returns the
// rows it changed.
func (p *Processor) exec(ctx context.Context, what, prefix string, ids []string, args ...any) (int, error) {
	all := make([]any, 0, len(args)+len(ids))
	all = append(all, args...)
	for _, id := range ids {
		all = append(all, id)
	}
	r, err := p.list.db.ExecContext(ctx, batchStatement(p.list.db, prefix, len(ids)), all...)
	if err != nil {
		return 0, fmt.Errorf("todolist: %s of %q: %w", what, p.list.name, err)
	}
	n, err := r.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("todolist: %s of %q: %w", what, p.list.name, err)
	}
	return int(n), nil
}

// run calls the action, turning a panic into an error.
func (p *Processor) run(ctx context.Context, it Item) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrActionPanicked, r)
		}
	}()
	return p.action(ctx, it)
}

func (p *Processor) abandon(err error) error {
	return fmt.Errorf("todolist: process %q: abandoned the batch in flight, its claims lapse after the lease: %w", p.list.name, err)
}

// fail records a failed attempt: backoff, or parking after the last one.
func (p *Processor) fail(ctx context.Context, token string, it Item, actErr error, res *Result) error {
	it.Attempts++
	it.LastError = errorText(actErr)
	it.Parked = it.Attempts >= p.cfg.maxAttempts
	it.Claimed = false
	it.NextAttempt = p.cfg.clock.Now().Add(p.backoff(it.Attempts))
	parked := 0
	if it.Parked {
		parked = 1
	}
	l := p.list
	r, err := l.db.ExecContext(ctx, l.q.fail, it.Attempts, it.LastError, sqldb.EncodeTime(it.NextAttempt), parked, l.name, it.ID, token)
	if err != nil {
		return fmt.Errorf("todolist: record failure of %q in %q: %w", it.ID, l.name, err)
	}
	if n, err := r.RowsAffected(); err != nil {
		return fmt.Errorf("todolist: record failure of %q in %q: %w", it.ID, l.name, err)
	} else if n == 0 {
		res.Lost++
		return nil
	}
	if it.Parked {
		res.Parked++
		if p.cfg.observer.Parked != nil {
			p.cfg.observer.Parked(l.name, it, actErr)
		}
		return nil
	}
	res.Failed++
	if p.cfg.observer.Failed != nil {
		p.cfg.observer.Failed(l.name, it, actErr)
	}
	return nil
}

// backoff is the wait after the given number of failed attempts: the base,
// doubled for each attempt after the first, capped.
func (p *Processor) backoff(attempts int) time.Duration {
	d := p.cfg.backoffBase
	for i := 1; i < attempts && d < p.cfg.backoffMax; i++ {
		d *= 2
	}
	return min(d, p.cfg.backoffMax)
}

func (p *Processor) countBacklog(ctx context.Context, res *Result) error {
	l := p.list
	if err := l.db.GetContext(ctx, &res.Backlog, l.q.backlog, l.name, sqldb.EncodeTime(res.Cutoff)); err != nil {
		return fmt.Errorf("todolist: count backlog of %q: %w", l.name, err)
	}
	return nil
}

func isConflict(err error) bool {
	var c interface{ Conflict() bool }
	return errors.As(err, &c) && c.Conflict()
}

// maxErrorLength bounds the stored text of a failure: an error is for a
// person to read, and some errors carry whole responses.
const maxErrorLength = 2000

func errorText(err error) string {
	s := strings.ToValidUTF8(strings.ReplaceAll(err.Error(), "\x00", ""), "\uFFFD")
	if len(s) <= maxErrorLength {
		return s
	}
	cut := maxErrorLength
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
