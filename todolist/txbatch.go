package todolist

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"

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

// perTxBatch runs a [TxBatchAction] for each batch, in the transaction
// that takes it.
type perTxBatch TxBatchAction

func (a perTxBatch) process(ctx context.Context, p *Processor, start time.Time, res *Result) (bool, error) {
	return p.processTx(ctx, start, res, a)
}

func (perTxBatch) concurrent() bool { return true }

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
		if p.cfg.dry(n, limit) {
			return true, nil
		}
	}
}
