package todolist

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

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

// workingOn reports whether ctx is that of the action working id of list,
// or of the batch action working a batch of list that holds id: the
// completion rule of [List.RemoveTx]. The processor says so through ctx,
// so that the list needs to know nothing of processors.
func workingOn(ctx context.Context, list, id string) bool {
	w, ok := ctx.Value(workingKey{}).(working)
	if !ok || w.list != list {
		return false
	}
	if w.batch == nil {
		return w.id == id
	}
	_, in := w.batch[id]
	return in
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

// touch records that ctx's transactional batch action changes id of list,
// if id is one of its batch.
func touch(ctx context.Context, list, id string) {
	if w, ok := ctx.Value(workingKey{}).(working); ok && w.tx != nil && workingOn(ctx, list, id) {
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

// decideBatch calls decide for batch and returns one outcome per item:
// the action's or, when it failed as a whole (whole), for every item its
// error, its panic or the wrong number of outcomes. The action's ctx
// tells [List.RemoveTx] which items it works and, for a transactional
// batch, collects in tx what it leaves for its processor.
func decideBatch(ctx context.Context, list string, batch []claimed, tx *txState, decide func(ctx context.Context, items []Item) ([]error, error)) (outcomes []error, whole bool) {
	items := make([]Item, len(batch))
	ids := make(map[string]struct{}, len(batch))
	for i, c := range batch {
		items[i] = c.Item
		ids[c.ID] = struct{}{}
	}
	ctx = context.WithValue(ctx, workingKey{}, working{list: list, batch: ids, tx: tx})
	outcomes, err := func() (outcomes []error, err error) {
		defer func() {
			if r := recover(); r != nil {
				outcomes, err = nil, fmt.Errorf("%w: %v", ErrActionPanicked, r)
			}
		}()
		return decide(ctx, items)
	}()
	if err == nil && len(outcomes) != len(batch) {
		err = fmt.Errorf("%w: %d for a batch of %d items", ErrBatchOutcomes, len(outcomes), len(batch))
	}
	if err == nil {
		return outcomes, false
	}
	outcomes = make([]error, len(batch))
	for i := range outcomes {
		outcomes[i] = err
	}
	return outcomes, true
}

// decide is decideBatch for a processor's batch action starting at
// start: it records the lateness of each item and traces the action.
func (p *Processor) decide(ctx context.Context, batch []claimed, start time.Time, tx *txState, action func(ctx context.Context, items []Item) ([]error, error)) (outcomes []error, whole bool) {
	p.lateBatch(ctx, batch, start)
	spanCtx, span := p.list.tr.startBatch(ctx, batch, start)
	outcomes, whole = decideBatch(spanCtx, p.list.name, batch, tx, action)
	if span != nil {
		endBatch(span, batch, outcomes, whole, p.cfg.clock.Now())
	}
	return outcomes, whole
}
