package todolist

import (
	"cmp"
	"context"
	"database/sql"
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
	// done holds the finished items of the last batch until the next claim
	// removes them in the same round trip (on PostgreSQL), or until the
	// tick ends.
	var done batchDone
	for {
		limit := p.cfg.batchSize
		if p.cfg.maxItems > 0 {
			limit = min(limit, p.cfg.maxItems-res.Claimed)
		}
		if limit <= 0 || (p.overTime(start) && res.Claimed > 0) {
			if err := p.finish(ctx, done, true, &res); err != nil {
				return res, err
			}
			break
		}
		batch, token, err := p.claim(ctx, cutoff, limit, done, &res)
		if err != nil {
			return res, err
		}
		res.Claimed += len(batch)
		var stopped bool
		done, stopped, err = p.work(ctx, batch, token, start, &res)
		if err != nil {
			return res, err
		}
		if stopped || len(batch) < limit {
			if err := p.finish(ctx, done, stopped, &res); err != nil {
				return res, err
			}
			break
		}
	}
	if p.cfg.observer.Tick != nil {
		p.cfg.observer.Tick(p.list.name, res)
	}
	return res, nil
}

// claimed is an item as a batch holds it.
type claimed struct {
	Item
	// ref is the row's ctid on PostgreSQL, which finds it without an
	// index; "" on SQLite.
	ref string
}

// batchDone is the items of one batch whose action succeeded, still to be
// removed under the batch's token: their IDs, and their refs on
// PostgreSQL.
type batchDone struct {
	token string
	ids   []string
	refs  []string
}

// finish removes the last batch's done items and, when the budget ended
// the tick, counts the backlog.
func (p *Processor) finish(ctx context.Context, done batchDone, counting bool, res *Result) error {
	if err := p.removeDone(ctx, done, res); err != nil {
		return err
	}
	if counting {
		return p.countBacklog(ctx, res)
	}
	return nil
}

func (p *Processor) overTime(start time.Time) bool {
	return p.cfg.timeBudget > 0 && p.cfg.clock.Since(start) >= p.cfg.timeBudget
}

// claim takes up to limit items due at cutoff in one statement, under a
// fresh token, and returns them earliest due first. It removes the done
// items of the previous batch first, in the same statement on PostgreSQL.
func (p *Processor) claim(ctx context.Context, cutoff time.Time, limit int, done batchDone, res *Result) ([]claimed, string, error) {
	l := p.list
	postgres := l.q.removeDone != ""
	if !postgres {
		if err := p.removeDone(ctx, done, res); err != nil {
			return nil, "", err
		}
	}
	token := uuid.NewString()
	now := p.cfg.clock.Now()
	leaseEnd := now.Add(p.cfg.lease)
	args := []any{l.name, sqldb.EncodeTime(cutoff), sqldb.EncodeTime(now), limit, token, sqldb.EncodeTime(leaseEnd), l.name}
	if postgres {
		prev, refs := done.token, done.refs
		if prev == "" {
			// No previous batch: the claim skips rows carrying this
			// token, and no row carries a fresh one.
			prev, refs = token, []string{}
		}
		args = append([]any{l.name, prev, refs}, args[1:6]...)
	}
	rows, err := l.db.QueryContext(ctx, l.q.claim, args...)
	if err != nil {
		return nil, "", fmt.Errorf("todolist: claim due items of %q: %w", l.name, err)
	}
	defer rows.Close()
	batch := make([]claimed, 0, limit)
	for rows.Next() {
		it := claimed{Item: Item{NextAttempt: leaseEnd, Claimed: true}}
		var due int64
		dest := []any{&it.ID, &due, &it.Attempts, &it.LastError}
		if postgres {
			dest = append(dest, &it.ref)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, "", fmt.Errorf("todolist: claim due items of %q: %w", l.name, err)
		}
		if it.ID == "" {
			// PostgreSQL's count of the previous batch's removed items.
			res.Lost += len(done.ids) - int(due)
			continue
		}
		it.Due = sqldb.DecodeTime(due)
		batch = append(batch, it)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("todolist: claim due items of %q: %w", l.name, err)
	}
	slices.SortFunc(batch, func(a, b claimed) int {
		return cmp.Or(a.Due.Compare(b.Due), strings.Compare(a.ID, b.ID))
	})
	return batch, token, nil
}

// removeDone deletes the done items of a batch in one statement; those
// that changed hands meanwhile are kept and counted as lost outcomes.
func (p *Processor) removeDone(ctx context.Context, done batchDone, res *Result) error {
	if len(done.ids) == 0 {
		return nil
	}
	l := p.list
	var (
		r   sql.Result
		err error
	)
	if l.q.removeDone != "" {
		r, err = l.db.ExecContext(ctx, l.q.removeDone, l.name, done.token, done.refs)
	} else {
		r, err = p.exec(ctx, `DELETE FROM todolist_items WHERE list = ? AND claim = ? AND id IN`, done.ids, l.name, done.token)
	}
	n, err := rowsAffected(r, err)
	if err != nil {
		return fmt.Errorf("todolist: remove done items of %q: %w", l.name, err)
	}
	res.Lost += len(done.ids) - n
	return nil
}

// work runs the action for each item of a claimed batch and returns the
// items that are done, for the caller to remove set-wise. It releases the
// conflicts in one statement and the items the budget left unstarted in
// another; failures are written one by one, as each has its own attempt
// count. stopped reports that the time budget ended the tick.
func (p *Processor) work(ctx context.Context, batch []claimed, token string, start time.Time, res *Result) (done batchDone, stopped bool, err error) {
	done.token = token
	var conflicts, unstarted []string
	for i, it := range batch {
		if err := ctx.Err(); err != nil {
			return done, false, p.abandon(err)
		}
		started := res.Done + res.Failed + res.Parked + res.Conflicts
		if started > 0 && p.overTime(start) {
			for _, rest := range batch[i:] {
				unstarted = append(unstarted, rest.ID)
			}
			stopped = true
			break
		}
		actErr := p.run(ctx, it.Item)
		if err := ctx.Err(); err != nil {
			// The action most likely failed because of the cancellation;
			// counting that as an attempt would punish the item.
			return done, false, p.abandon(err)
		}
		switch {
		case actErr == nil:
			done.ids = append(done.ids, it.ID)
			if it.ref != "" {
				done.refs = append(done.refs, it.ref)
			}
			res.Done++
			if p.cfg.observer.Done != nil {
				p.cfg.observer.Done(p.list.name, it.Item)
			}
		case isConflict(actErr):
			conflicts = append(conflicts, it.ID)
			res.Conflicts++
		default:
			if err := p.fail(ctx, token, it.Item, actErr, res); err != nil {
				return done, false, err
			}
		}
	}
	l := p.list
	if len(conflicts) > 0 {
		// Released just past the cutoff: the next tick takes them, this
		// one does not spin on them.
		next := sqldb.EncodeTime(res.Cutoff) + 1
		r, err := p.exec(ctx, `UPDATE todolist_items SET claim = '', claimed_until = 0, run_at = ? WHERE list = ? AND claim = ? AND id IN`, conflicts, next, l.name, token)
		if _, err := rowsAffected(r, err); err != nil {
			return done, false, fmt.Errorf("todolist: release conflicting items of %q: %w", l.name, err)
		}
	}
	if len(unstarted) > 0 {
		r, err := p.exec(ctx, `UPDATE todolist_items SET claim = '', claimed_until = 0 WHERE list = ? AND claim = ? AND id IN`, unstarted, l.name, token)
		n, err := rowsAffected(r, err)
		if err != nil {
			return done, false, fmt.Errorf("todolist: release unstarted items of %q: %w", l.name, err)
		}
		res.Released += n
	}
	return done, stopped, nil
}

// exec runs prefix followed by the list of ids, after args.
func (p *Processor) exec(ctx context.Context, prefix string, ids []string, args ...any) (sql.Result, error) {
	all := make([]any, 0, len(args)+len(ids))
	all = append(all, args...)
	for _, id := range ids {
		all = append(all, id)
	}
	return p.list.db.ExecContext(ctx, batchStatement(p.list.db, prefix, len(ids)), all...)
}

// rowsAffected returns the rows a statement changed, or err.
func rowsAffected(r sql.Result, err error) (int, error) {
	if err != nil {
		return 0, err
	}
	n, err := r.RowsAffected()
	return int(n), err
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
	now := sqldb.EncodeTime(p.cfg.clock.Now())
	if err := l.db.GetContext(ctx, &res.Backlog, l.q.backlog, l.name, sqldb.EncodeTime(res.Cutoff), now); err != nil {
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
