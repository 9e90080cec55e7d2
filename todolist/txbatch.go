package todolist

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/tick"
)

// TxBatchAction is a [BatchAction] that decides its batch inside the
// transaction that took it: tx holds the batch's rows (on PostgreSQL
// locked FOR UPDATE, on SQLite under the database's one write lock) and,
// once the action returns, the processor writes every outcome in tx and
// commits it with whatever the action wrote there. A batch then costs one
// commit instead of three (claim, the action's own, settle) and writes no
// claim: what the action decided and what the list records of it commit
// together or not at all.
//
// The outcomes mean what a BatchAction's do: nil is done, a conflict
// anywhere in an error's tree is tried again next tick without counting an
// attempt, any other error is a failure that backs off and parks. What the
// action wrote in tx for an item it reports failed or conflicting commits
// with the rest, so the action must undo it itself (a savepoint per item,
// say); the second value, a panic, or a slice whose length is not the
// batch's fails every item and undoes everything the action wrote.
//
// Changes the action makes to its batch's items must go through the list
// with ctx and tx ([List.AddTx], [List.AddManyTx], [List.RemoveTx]), as a
// projection fed from the action's events does: an item the action
// re-added or removed is then left as the action left it, where a done
// item is otherwise removed.
type TxBatchAction func(ctx context.Context, tx *sqlx.Tx, items []Item) ([]error, error)

// NewTxBatchProcessor returns a processor deciding the due items of list
// a batch at a time with action, each batch taken, decided and settled in
// one transaction (see [TxBatchAction] and the package documentation,
// Batches in one transaction). It takes the options of [NewProcessor]
// but the lease's: nothing is claimed, the transaction holds the batch.
func NewTxBatchProcessor(list *List, action TxBatchAction, opts ...ProcessorOption) (*Processor, error) {
	if list == nil {
		return nil, fmt.Errorf("todolist: new transactional batch processor: %w", ErrNilList)
	}
	if action == nil {
		return nil, fmt.Errorf("todolist: new transactional batch processor for %q: %w", list.name, ErrNilAction)
	}
	return newProcessor(list, perTxBatch(action), opts)
}

// perTxBatch runs a [TxBatchAction] for each batch, in the transaction
// that takes it.
type perTxBatch TxBatchAction

func (a perTxBatch) process(ctx context.Context, p *Processor, start time.Time, res *Result) (bool, error) {
	return p.processTx(ctx, start, res, a)
}

func (perTxBatch) concurrent() bool { return true }

// HandleTxBatch is [Handle] for a [TxBatchAction]: it returns a handler
// that works list's due items, a transaction per batch, on every
// passage-of-time event of type E.
func HandleTxBatch[E tick.Event](list *List, action TxBatchAction, opts ...ProcessorOption) (func(context.Context, E) error, error) {
	p, err := NewTxBatchProcessor(list, action, opts...)
	if err != nil {
		return nil, err
	}
	return Handler[E](p), nil
}

// txState is what the action of a transactional batch leaves for the
// processor: the items of its batch it changed through the list, which
// are left as it left them, and the functions to call once the batch
// commits.
type txState struct {
	mu      sync.Mutex
	touched map[string]struct{}
	after   []func(context.Context)
	// failed are the failures settleTx recorded, with their attempt.
	failed []failure
}

// failure is an item's failed attempt as recorded, and its error.
type failure struct {
	item Item
	err  error
}

func (t *txState) touch(id string) {
	t.mu.Lock()
	t.touched[id] = struct{}{}
	t.mu.Unlock()
}

func (t *txState) has(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.touched[id]
	return ok
}

// touch records that ctx's transactional batch action changes id, if id
// is one of its batch.
func (l *List) touch(ctx context.Context, id string) {
	if w, ok := ctx.Value(workingKey{}).(working); ok && w.tx != nil && l.working(ctx, id) {
		w.tx.touch(id)
	}
}

// AfterCommit registers f to be called once the transaction of the
// [TxBatchAction] whose ctx is given has committed, with the processor's
// ctx: what must only happen once the batch's decisions are durable, such
// as publishing the events it appended. Functions are called in the order
// registered, and not at all if the transaction does not commit or the
// action fails as a whole (its writes are undone then). It
// reports false, and registers nothing, when ctx is not that of a
// transactional batch action.
func AfterCommit(ctx context.Context, f func(context.Context)) bool {
	w, ok := ctx.Value(workingKey{}).(working)
	if !ok || w.tx == nil || f == nil {
		return false
	}
	w.tx.mu.Lock()
	w.tx.after = append(w.tx.after, f)
	w.tx.mu.Unlock()
	return true
}

// afterCommit calls the functions the action registered with AfterCommit;
// a panic in one is returned as an error, after the others were called.
func (t *txState) afterCommit(ctx context.Context) error {
	var errs []error
	for _, f := range t.after {
		func() {
			defer func() {
				if r := recover(); r != nil {
					errs = append(errs, fmt.Errorf("%w: after the batch committed: %v", ErrActionPanicked, r))
				}
			}()
			f(ctx)
		}()
	}
	return errors.Join(errs...)
}

// processTx is Process for a transactional batch action: batch after
// batch, each in a transaction of its own, until none is due, the budget
// is spent or ctx ends; by as many workers at once as WithWorkers says.
// drained reports that every worker stopped on a pick that found fewer
// items than it could take: nothing ready was left.
func (p *Processor) processTx(ctx context.Context, start time.Time, res *Result, action perTxBatch) (drained bool, err error) {
	if p.cfg.workers == 1 {
		var claimed atomic.Int64
		return p.txWorker(ctx, start, res, &claimed, action)
	}
	results := make([]Result, p.cfg.workers)
	errs := make([]error, p.cfg.workers)
	dry := make([]bool, p.cfg.workers)
	var claimed atomic.Int64 // by all the workers, for the budget
	var wg sync.WaitGroup
	for w := range results {
		results[w].Cutoff = res.Cutoff
		wg.Go(func() { dry[w], errs[w] = p.txWorker(ctx, start, &results[w], &claimed, action) })
	}
	wg.Wait()
	drained = true
	for w, r := range results {
		res.Claimed += r.Claimed
		res.Done += r.Done
		res.Failed += r.Failed
		res.Parked += r.Parked
		res.Conflicts += r.Conflicts
		res.Lost += r.Lost
		drained = drained && dry[w]
	}
	return drained, errors.Join(errs...)
}

// txWorker works batches until none is due or the tick's budget, shared
// through claimed with the other workers, is spent; drained reports the
// former.
func (p *Processor) txWorker(ctx context.Context, start time.Time, res *Result, claimed *atomic.Int64, action perTxBatch) (drained bool, err error) {
	for {
		// Reserved before the pick, so that workers together never take
		// more than the maximum; what the pick did not take is given back.
		taken := claimed.Load()
		limit := p.nextLimit(start, int(taken))
		if limit <= 0 {
			return false, nil
		}
		if !claimed.CompareAndSwap(taken, taken+int64(limit)) {
			continue // another worker reserved meanwhile
		}
		n, err := p.txBatch(ctx, limit, res, action)
		claimed.Add(int64(n - limit))
		if err != nil {
			return false, err
		}
		if n < limit {
			return true, nil
		}
	}
}

// txBatch takes, decides and settles one batch in one transaction, and
// returns how many items it took. Nothing is written unless the
// transaction commits: a failure before then, a cancelled ctx or a crash
// leaves every item due as it was, for the next tick.
//
// An action that fails as a whole is undone by rolling the transaction
// back, and its outcome is recorded in a transaction of its own: a
// savepoint would undo it in place, but every picked row that a
// subtransaction then changes gets a MultiXact for its deleter, which
// index scans never take for dead, so that the list's index kept every
// item removed since the last vacuum and each pick walked them all.
func (p *Processor) txBatch(ctx context.Context, limit int, res *Result, action perTxBatch) (n int, err error) {
	l := p.list
	tx, err := l.db.BeginTxx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("todolist: process %q: begin: %w", l.name, err)
	}
	ended := false
	defer func() {
		if !ended {
			err = errors.Join(err, ignoreDone(tx.Rollback()))
		}
	}()
	batch, err := p.pickTx(ctx, tx, res.Cutoff, limit)
	if err != nil {
		return 0, fmt.Errorf("todolist: take due items of %q: %w", l.name, err)
	}
	if len(batch) == 0 {
		return 0, nil
	}
	res.Claimed += len(batch)
	state := &txState{touched: make(map[string]struct{}, 8)}
	outcomes, whole := decideBatch(ctx, l.name, batch, state, func(ctx context.Context, items []Item) ([]error, error) {
		return action(ctx, tx, items)
	})
	if ctx.Err() != nil {
		// As for an Action: failures most likely came from the
		// cancellation, and are not counted. Nothing was written.
		return len(batch), fmt.Errorf("todolist: process %q: abandoned the batch in flight, its items stay due: %w", l.name, context.Cause(ctx))
	}
	if whole {
		ended = true
		if err := ignoreDone(tx.Rollback()); err != nil {
			return len(batch), fmt.Errorf("todolist: process %q: undo the failed batch: %w", l.name, err)
		}
		tx, err = l.db.BeginTxx(ctx, nil)
		if err != nil {
			return len(batch), fmt.Errorf("todolist: process %q: begin: %w", l.name, err)
		}
		ended = false
		// What the action registered follows writes that were undone.
		state = &txState{touched: map[string]struct{}{}}
	}
	if err := p.settleTx(ctx, tx, batch, outcomes, state, res); err != nil {
		return len(batch), fmt.Errorf("todolist: settle a batch of %q: %w", l.name, err)
	}
	if err := tx.Commit(); err != nil {
		ended = true
		return len(batch), fmt.Errorf("todolist: process %q: commit: %w", l.name, err)
	}
	ended = true
	p.reportTx(batch, outcomes, state, res)
	if err := state.afterCommit(ctx); err != nil {
		return len(batch), fmt.Errorf("todolist: process %q: %w", l.name, err)
	}
	return len(batch), nil
}

func ignoreDone(err error) error {
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}

// pickTx reads a batch in tx, earliest due first, then by ID.
func (p *Processor) pickTx(ctx context.Context, tx *sqlx.Tx, cutoff time.Time, limit int) ([]claimed, error) {
	l := p.list
	batch, err := l.drv.pickTx(ctx, tx, l.name, sqldb.EncodeTime(cutoff), sqldb.EncodeTime(p.cfg.clock.Now()), limit)
	if err != nil {
		return nil, err
	}
	sortBatch(batch)
	return batch, nil
}

// settleTx writes a transactional batch's outcomes in tx: removes the
// done items still as picked, sets the conflicts to run just past the
// cutoff, records each failure on an item still as picked, and adds the
// batch to the list's totals. Outcomes it could not write, the item
// having changed hands, it counts as Lost.
func (p *Processor) settleTx(ctx context.Context, tx *sqlx.Tx, batch []claimed, outcomes []error, state *txState, res *Result) error {
	l := p.list
	var done, conflicts, failed []claimed
	for i, it := range batch {
		switch err := outcomes[i]; {
		case err == nil:
			if !state.has(it.ID) {
				done = append(done, it)
			}
		case isConflict(err):
			conflicts = append(conflicts, it)
		default:
			failed = append(failed, it)
		}
	}
	// Only the items still as picked: one the transaction changed
	// without going through the list is new work.
	var err error
	if done, err = l.drv.unchangedTx(ctx, tx, l.name, done); err != nil {
		return err
	}
	if conflicts, err = l.drv.unchangedTx(ctx, tx, l.name, conflicts); err != nil {
		return err
	}
	if failed, err = l.drv.unchangedTx(ctx, tx, l.name, failed); err != nil {
		return err
	}
	removed := 0
	if len(done) > 0 {
		if removed, err = l.drv.removeTx(ctx, tx, l.name, done); err != nil {
			return fmt.Errorf("remove done items: %w", err)
		}
	}
	if len(conflicts) > 0 {
		next := sqldb.EncodeTime(res.Cutoff) + 1
		if err := l.drv.conflictTx(ctx, tx, l.name, conflicts, next); err != nil {
			return fmt.Errorf("set conflicting items to run again: %w", err)
		}
	}
	errs := make(map[string]error, len(failed))
	for i, it := range batch {
		if outcomes[i] != nil {
			errs[it.ID] = outcomes[i]
		}
	}
	now := p.cfg.clock.Now()
	var counts batchDone
	for _, f := range failed {
		it := p.failedAttempt(f.Item, errs[f.ID], now)
		recorded, err := l.drv.failTx(ctx, tx, l.name, f, it)
		if err != nil {
			return fmt.Errorf("record failure of %q: %w", it.ID, err)
		}
		if !recorded {
			res.Lost++ // another processor has it now
			continue
		}
		counts.failures++
		if it.Parked {
			counts.parkings++
		}
		state.failed = append(state.failed, failure{item: it, err: errs[f.ID]})
	}
	if err := p.count(ctx, tx, removed, counts); err != nil {
		return fmt.Errorf("count the batch: %w", err)
	}
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

// reportTx counts a committed transactional batch in res and tells the
// observer, now that what it reports is durable.
func (p *Processor) reportTx(batch []claimed, outcomes []error, state *txState, res *Result) {
	obs := p.cfg.observer
	for i, it := range batch {
		switch err := outcomes[i]; {
		case err == nil:
			res.Done++
			if obs.Done != nil {
				obs.Done(p.list.name, it.Item)
			}
		case isConflict(err):
			res.Conflicts++
		}
	}
	for _, f := range state.failed {
		switch {
		case f.item.Parked:
			res.Parked++
			if obs.Parked != nil {
				obs.Parked(p.list.name, f.item, f.err)
			}
		default:
			res.Failed++
			if obs.Failed != nil {
				obs.Failed(p.list.name, f.item, f.err)
			}
		}
	}
}

// HoldTx locks the row of the item id, if the list has it, until ext's
// transaction ends, on PostgreSQL: a transactional batch then skips the
// item, and one that already took it is waited for. On SQLite, whose
// write transactions exclude each other, it does nothing. Code that
// changes what an item stands for (the schedule behind it, say) holds the
// item first, so that it and the batches of a [TxBatchAction] lock their
// rows in one order: the item, then the rest.
func (l *List) HoldTx(ctx context.Context, ext sqlx.ExtContext, id string) error {
	if err := l.drv.hold(ctx, ext, l.name, id); err != nil {
		return fmt.Errorf("todolist: hold %q of %q: %w", id, l.name, err)
	}
	return nil
}
