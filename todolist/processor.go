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
	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/tick"
)

// Action does what an item stands for, e.g. cancel the unpaid order with
// the item's ID. It is called with the item's state as claimed.
//
// Return nil when there is nothing left to do, including when the work
// turned out to be unnecessary (the order was paid meanwhile): the item is
// removed. Return an error to retry later with backoff; the item is parked
// after too many failures. An error that has, anywhere in its tree (what
// it wraps, every branch of a join, all the way down), a value with a
// method Conflict() bool returning true (such as the event store's version
// conflict) is not a failure, even beside real failures: the item is tried
// again on the next tick without counting an attempt (see the package
// documentation, Conflicts). A panic counts as a failure.
//
// Items are delivered at least once: a processor that dies, or loses its
// lease, after the action but before recording the outcome leaves the item
// to be worked again when its lease ends, so actions must be idempotent —
// an action that decides from current state, as a level-triggered one
// does, is. ctx ends when the tick's context does; a lost lease does not
// cancel an action already running.
//
// ctx also tells which item the action works: an action that removes its
// item with [List.RemoveTx] under ctx (or a context derived from it) — a
// projection of the list applied in the transaction appending the
// action's events does — counts it completed in that transaction, so the
// completion survives its processor (see the package documentation,
// Totals). Pass ctx on to whatever removes the item.
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
	// Released counts claimed items the budget or a lease running short
	// left unstarted; the next tick takes them.
	Released int
	// Lost counts outcomes not written because the item had changed hands
	// meanwhile: it was removed, re-added with a later due time, or the
	// batch's lease was lost (see LeasesLost). The item is then left as
	// the other party left it.
	Lost int
	// LeasesLost counts the batches whose lease was lost (see
	// [Observer].LeaseLost); their outcomes not yet written count as
	// Lost, and their items are worked again by whoever claims them.
	LeasesLost int
	// Backlog counts the items due at the cutoff that the tick left for
	// the next one: those a budget stopped it from taking, and those
	// re-added or changed while it worked. A transactional batch
	// processor's tick that ran dry leaves none and does not count.
	Backlog int
}

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

// perItem runs an [Action] for each item of a claimed batch.
type perItem Action

func (a perItem) process(ctx context.Context, p *Processor, start time.Time, res *Result) (bool, error) {
	return false, p.processClaimed(ctx, start, res, a.work)
}

func (perItem) concurrent() bool { return false }

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
	return newProcessor(list, perItem(action), opts)
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
		return nil, fmt.Errorf("todolist: new processor for %q: %w", list.name, invalid("workers %d: only a transactional batch processor works batches at once", cfg.workers))
	}
	return &Processor{list: list, kind: kind, cfg: cfg}, nil
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

// workClaimed decides a claimed batch, held by done.lease, and returns
// what is left to write of its outcome; stopped reports that the time
// budget or the lease ended the tick.
type workClaimed func(ctx context.Context, p *Processor, batch []claimed, done batchDone, start time.Time, res *Result) (_ batchDone, stopped bool, err error)

// processClaimed is process for the actions that run outside the
// transaction that claims their items: batch after batch, each claimed
// under a lease, worked with work and settled.
func (p *Processor) processClaimed(ctx context.Context, start time.Time, res *Result, work workClaimed) error {
	for {
		limit := p.nextLimit(start, res.Claimed)
		if limit <= 0 {
			return nil
		}
		batch, token, leaseEnd, record, err := p.claim(ctx, res.Cutoff, limit)
		if err != nil {
			return err
		}
		res.Claimed += len(batch)
		stopped, err := p.batch(ctx, batch, batchDone{token: token, record: record}, leaseEnd, start, res, work)
		if err != nil {
			return err
		}
		// A short pick means nothing more was due.
		if stopped || len(batch) < limit {
			return nil
		}
	}
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

// batchDone is what is left to write of one batch's outcome: the items
// whose action succeeded, to be removed under the batch's token, and the
// failures and parkings recorded on its items, to be added to the list's
// totals with the removal. record reports that the claim left a record
// still to be deleted (see driver.claim), unless lapse asks to leave it
// to lapse. lease keeps the batch's claim: nothing is written once it is
// lost.
type batchDone struct {
	token              string
	lease              *keeper
	items              []claimed
	failures, parkings int
	record, lapse      bool
}

func (d batchDone) empty() bool {
	return !d.record && len(d.items) == 0 && d.failures == 0 && d.parkings == 0
}

func (p *Processor) overTime(start time.Time) bool {
	return p.cfg.timeBudget > 0 && p.cfg.clock.Since(start) >= p.cfg.timeBudget
}

// batch works one claimed batch under its lease, kept by a [keeper]
// while the actions run, and settles its outcome before it returns; the
// outcome is written only while the lease holds. stopped reports that the
// tick should end: its time budget is spent, or the lease was lost or ran
// short.
func (p *Processor) batch(ctx context.Context, batch []claimed, done batchDone, leaseEnd, start time.Time, res *Result, work workClaimed) (stopped bool, err error) {
	k := p.keep(ctx, done.token, batch, leaseEnd)
	// Also when an action ends the goroutine (runtime.Goexit, as a
	// test's t.FailNow or t.Skip does).
	defer k.close()
	done.lease = k
	done, stopped, err = work(ctx, p, batch, done, start, res)
	k.close() // no renewal while the batch is settled
	if err == nil {
		if err = p.settle(ctx, done, res); err != nil && ctx.Err() != nil {
			err = errors.Join(err, p.abandon(ctx, done, res, context.Cause(ctx)))
		}
	}
	k.report(res)
	return stopped, err
}

// claim takes up to limit items due at cutoff under a fresh token, and
// returns them earliest due first, with the end of their lease and
// whether the claim left a record for the settle to delete.
func (p *Processor) claim(ctx context.Context, cutoff time.Time, limit int) (batch []claimed, token string, leaseEnd time.Time, record bool, err error) {
	l := p.list
	token = uuid.NewString()
	now := p.cfg.clock.Now()
	leaseEnd = now.Add(p.cfg.lease)
	batch, record, err = l.drv.claim(ctx, l.db, l.name, sqldb.EncodeTime(cutoff), sqldb.EncodeTime(now), limit, token, leaseEnd)
	if err != nil {
		return nil, "", time.Time{}, false, fmt.Errorf("todolist: claim due items of %q: %w", l.name, err)
	}
	sortBatch(batch)
	return batch, token, leaseEnd, record, nil
}

// sortBatch orders a batch as it is worked: earliest due first, then by
// ID.
func sortBatch(batch []claimed) {
	slices.SortFunc(batch, func(a, b claimed) int {
		return cmp.Or(a.Due.Compare(b.Due), strings.Compare(a.ID, b.ID))
	})
}

// settle writes what is left of a batch's outcome in one transaction,
// while the batch's lease holds: it deletes the done items in one
// statement, and adds the number of rows it deleted and the batch's
// failures and parkings to the list's totals; on PostgreSQL it also
// deletes the batch's claim row, which releases the items it still held.
// Done items that changed hands meanwhile are kept and counted as lost
// outcomes.
//
// An item the action's own transaction removed is gone already: the
// settle deletes nothing for it and counts nothing, since its removal
// counted it (see [List.RemoveTx]). Once the lease is lost no success is
// written or counted: another processor may have taken the items, and it
// is the one that completes them (see [Stats]).
func (p *Processor) settle(ctx context.Context, done batchDone, res *Result) error {
	if done.empty() {
		return nil
	}
	l := p.list
	var (
		n    int
		held bool
		err  error
	)
	if done.lease.holds(p.cfg.clock.Now()) != nil {
		// A claim record is left to lapse: the next claimer drops it. The
		// failures were written on the items and count.
		err = p.count(ctx, l.db, 0, done)
	} else {
		n, held, err = l.drv.settle(ctx, l.db, settlement{
			list: l.name, token: done.token, done: done.items,
			failures: done.failures, parkings: done.parkings, lapse: done.lapse,
			holds: func() bool { return done.lease.holds(p.cfg.clock.Now()) == nil },
			now:   p.cfg.clock.Now,
		})
	}
	if err != nil {
		return fmt.Errorf("todolist: remove done items of %q and count the batch: %w", l.name, err)
	}
	if !held {
		res.Lost += len(done.items)
		return nil
	}
	return p.released(ctx, done, n, res)
}

// count adds completed and the batch's failures and parkings to the
// list's totals, unless all are zero.
func (p *Processor) count(ctx context.Context, ext sqlx.ExtContext, completed int, done batchDone) error {
	return countBatch(ctx, ext, p.list.name, completed, done.failures, done.parkings)
}

// released counts the done items that were not removed (n were) as lost
// outcomes, and releases those among them that a re-add left under the
// batch's claim, which hid them until now.
func (p *Processor) released(ctx context.Context, done batchDone, n int, res *Result) error {
	lost := len(done.items) - n
	if lost == 0 {
		return nil
	}
	res.Lost += lost
	l := p.list
	if err := l.drv.releaseReadded(ctx, l.db, l.name, done.token, done.items); err != nil {
		return fmt.Errorf("todolist: release re-added items of %q: %w", l.name, err)
	}
	return nil
}

// work runs the action for each item of a claimed batch, and returns the
// items that are done, for the caller to remove set-wise. It releases the
// conflicts in one statement and the items left unstarted in another;
// failures are written one by one, as each has its own attempt count.
func (a perItem) work(ctx context.Context, p *Processor, batch []claimed, done batchDone, start time.Time, res *Result) (_ batchDone, stopped bool, err error) {
	var conflicts, unstarted []claimed
	for i, it := range batch {
		if ctx.Err() != nil {
			return done, false, p.abandon(ctx, done, res, context.Cause(ctx))
		}
		started := res.Done + res.Failed + res.Parked + res.Conflicts
		if started > 0 && p.overTime(start) {
			unstarted = batch[i:]
			stopped = true
			break
		}
		if !done.lease.mayStart(p.cfg.clock.Now()) {
			// The lease is lost, or too short for an action to finish
			// within it if renewals fail from now on: another processor
			// may take the rest soon, or already has. They are released
			// and the tick ends: renewals that fail or come late mean
			// the database or this process is in trouble, and a claim
			// lost to another processor would only be fought over again.
			// The next tick takes what is left.
			unstarted = batch[i:]
			stopped = true
			break
		}
		actErr := a.run(ctx, p.list.name, it.Item)
		if actErr == nil {
			p.succeeded(&done, it, res)
		}
		if ctx.Err() != nil {
			// A failure most likely came from the cancellation; counting
			// it as an attempt would punish the item.
			return done, false, p.abandon(ctx, done, res, context.Cause(ctx))
		}
		if err := p.outcome(ctx, &done, it, actErr, &conflicts, res); err != nil {
			return done, false, p.abandon(ctx, done, res, err)
		}
	}
	if err := p.release(ctx, done.token, conflicts, unstarted, res); err != nil {
		return done, false, p.abandon(ctx, done, res, err)
	}
	return done, stopped, nil
}

// outcome records the outcome of an item's action other than success: a
// conflict is set aside in conflicts, to be released with the others, and
// any other error is a failed attempt (see fail).
func (p *Processor) outcome(ctx context.Context, done *batchDone, it claimed, actErr error, conflicts *[]claimed, res *Result) error {
	switch {
	case actErr == nil:
	case isConflict(actErr):
		*conflicts = append(*conflicts, it)
		res.Conflicts++
	default:
		return p.fail(ctx, done, it, actErr, res)
	}
	return nil
}

// release frees the conflicting items of a batch until just past the
// cutoff, in one statement, and the items left unstarted, in another.
func (p *Processor) release(ctx context.Context, token string, conflicts, unstarted []claimed, res *Result) error {
	l := p.list
	if len(conflicts) > 0 {
		// Released just past the cutoff: the next tick takes them, this
		// one does not spin on them.
		next := sqldb.EncodeTime(res.Cutoff) + 1
		if err := l.drv.releaseConflicts(ctx, l.db, l.name, token, conflicts, next, sqldb.EncodeTime(p.cfg.clock.Now())); err != nil {
			return fmt.Errorf("todolist: release conflicting items of %q: %w", l.name, err)
		}
	}
	if len(unstarted) > 0 {
		n, err := l.drv.releaseUnstarted(ctx, l.db, l.name, token, unstarted)
		if err != nil {
			return fmt.Errorf("todolist: release unstarted items of %q: %w", l.name, err)
		}
		res.Released += n
	}
	return nil
}

// succeeded records that an item's action returned nil: the item is settled
// with its batch, counted and reported.
func (p *Processor) succeeded(done *batchDone, it claimed, res *Result) {
	done.items = append(done.items, it)
	res.Done++
	if p.cfg.observer.Done != nil {
		p.cfg.observer.Done(p.list.name, it.Item)
	}
}

// run calls the action, turning a panic into an error. The action's ctx
// tells [List.RemoveTx] which item it works.
func (a perItem) run(ctx context.Context, list string, it Item) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrActionPanicked, r)
		}
	}()
	return a(context.WithValue(ctx, workingKey{}, working{list: list, id: it.ID}), it)
}

// working is what the ctx of an action carries: the list and the ID of
// the item it works, or for a [BatchAction] the IDs of its batch. A
// removal of one of those items under that ctx completes it (see
// [List.RemoveTx]).
type working struct {
	list, id string
	batch    map[string]struct{}
	// tx, for a [TxBatchAction], collects what it leaves for its
	// processor (see txState).
	tx *txState
}

// workingKey is the context key of [working].
type workingKey struct{}

// working reports whether ctx is that of the action working id of l, or
// of the batch action working a batch that holds id.
func (l *List) working(ctx context.Context, id string) bool {
	w, ok := ctx.Value(workingKey{}).(working)
	if !ok || w.list != l.name {
		return false
	}
	if w.batch == nil {
		return w.id == id
	}
	_, in := w.batch[id]
	return in
}

// abandonTimeout bounds the removal of an abandoned batch's done items.
const abandonTimeout = 5 * time.Second

// abandon gives up the batch in flight because of cause (ctx ended, or
// the storage failed), as a crash would, but first settles it: the items
// whose action already succeeded are removed, so that they are not worked
// again when the claims lapse, and the outcomes so far are counted.
func (p *Processor) abandon(ctx context.Context, done batchDone, res *Result, cause error) error {
	err := fmt.Errorf("todolist: process %q: abandoned the batch in flight, its claims lapse after the lease: %w", p.list.name, cause)
	cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), abandonTimeout)
	defer cancel()
	done.lapse = true
	return errors.Join(err, p.settle(cleanup, done, res))
}

// fail records a failed attempt: backoff, or parking after the last one.
// It counts the attempt in done, for the list's totals.
func (p *Processor) fail(ctx context.Context, done *batchDone, c claimed, actErr error, res *Result) error {
	token, it := done.token, c.Item
	now := p.cfg.clock.Now()
	if done.lease.holds(now) != nil {
		// Another processor may have the item already: the attempt is
		// its to record, and an unrecorded one is tried again.
		res.Lost++
		return nil
	}
	it = p.failedAttempt(it, actErr, now)
	l := p.list
	recorded, err := l.drv.fail(ctx, l.db, l.name, token, c, it, sqldb.EncodeTime(now))
	if err != nil {
		return fmt.Errorf("todolist: record failure of %q in %q: %w", it.ID, l.name, err)
	}
	if !recorded {
		// Removed, re-claimed after the lease, or re-added: the failure
		// belongs to the old due time, and a re-added item is released
		// as new work.
		res.Lost++
		return nil
	}
	done.failures++
	if it.Parked {
		done.parkings++
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
	n, err := l.drv.backlog(ctx, l.db, l.name, sqldb.EncodeTime(res.Cutoff), now)
	if err != nil {
		return fmt.Errorf("todolist: count backlog of %q: %w", l.name, err)
	}
	res.Backlog = n
	return nil
}

// isConflict reports whether any error in err's tree — err itself, what
// it wraps, and every branch of a join, all the way down — has a method
// Conflict() bool that returns true. errors.As would stop at the first
// value with the method, so a Conflict() false beside or above a real
// conflict would hide it.
func isConflict(err error) bool {
	if c, ok := err.(interface{ Conflict() bool }); ok && c.Conflict() {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		if inner := u.Unwrap(); inner != nil {
			return isConflict(inner)
		}
	case interface{ Unwrap() []error }:
		for _, inner := range u.Unwrap() {
			if inner != nil && isConflict(inner) {
				return true
			}
		}
	}
	return false
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
