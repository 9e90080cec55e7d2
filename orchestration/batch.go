package orchestration

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/eventstore"
	"github.com/passage-of-time/passage/todolist"
)

// wakeBatch replays a batch of due instances: their histories are read in
// one query, each function runs on, and what they recorded is appended,
// each stream with its own expected version, together with the wake-ups
// of those that suspended, in one transaction. What an instance recorded
// is appended after signals or a cancel that landed meanwhile, and it
// wakes again at once to see them; a conflict with decisions it did not
// load (another processor's) fails only that instance: it is replayed on
// the next tick. Steps that must be recorded before a later side effect
// are appended on their own as the function runs.
func (e *Engine) wakeBatch(ctx context.Context, items []todolist.Item) ([]error, error) {
	streams := make([]string, len(items))
	for i, it := range items {
		streams[i] = streamOf(it.ID)
	}
	histories, err := e.store.LoadMany(ctx, streams)
	if err != nil {
		return nil, fmt.Errorf("orchestration: wake %d instances: %w", len(items), err)
	}
	outcomes := make([]error, len(items))
	var (
		appends  []eventstore.StreamAppend
		versions []int64 // each append's expected version
		owners   []int   // the item of each append
		writers  []*loaded
		done     []*loaded
	)
	for i, it := range items {
		x, wf, err := e.prepare(ctx, it.ID, histories[streams[i]])
		if err != nil || x == nil {
			outcomes[i] = err
			continue
		}
		x.ctx, x.span = e.tr.startWakeup(ctx, x.execution, it.Due, e.clock.Now())
		out, runErr := callWorkflow(wf.run, x, x.input)
		if err := e.finish(x.ctx, x, out, runErr); err != nil {
			outcomes[i] = err
			endWakeup(x.execution, err, false, e.clock.Now())
			continue
		}
		// Every instance that writes anything — its events or only its
		// next wake-up — checks its stream's version: a signal or a cancel
		// that landed since the load made its item due now, and moving
		// that item to a later wake-up would hide it.
		if len(x.pending) > 0 || x.suspended {
			appends = append(appends, eventstore.StreamAppend{Stream: x.stream, Expected: eventstore.Exact(x.version), Events: x.pending})
			versions = append(versions, x.version)
			owners = append(owners, i)
			writers = append(writers, x)
		}
		done = append(done, x)
	}
	if len(appends) == 0 && !anySuspended(done) {
		endWakeups(e, done, nil, nil)
		return outcomes, nil
	}
	if e.fault != nil {
		for _, a := range appends {
			if err := e.fault(a.Events); err != nil {
				endWakeups(e, done, err, nil)
				return nil, err // a crash before the batch's write: nothing of it is stored
			}
		}
	}
	conflicted := map[string]bool{}
	err = e.inTx(ctx, func(tx *sqlx.Tx) error {
		results, overtook, err := e.appendPastInbox(ctx, tx, appends, versions)
		if err != nil {
			return err
		}
		for j, r := range results {
			if r.Conflict != nil {
				outcomes[owners[j]] = r.Conflict
				conflicted[appends[j].Stream] = true
			}
			if overtook[j] {
				writers[j].overtook = true
			}
		}
		var wakeups []todolist.NewItem
		now := e.clock.Now()
		for _, x := range done {
			if !x.suspended || conflicted[x.stream] {
				continue
			}
			due := x.wakeAt
			if x.overtook {
				// Signals or a cancel it has not seen came before what it
				// recorded: it looks at them at once (the inbox made its
				// item due, and a later wake-up would move it).
				due = now
			}
			wakeups = append(wakeups, todolist.NewItem{ID: x.instance, Due: due})
		}
		return e.list.AddManyTx(ctx, tx, wakeups)
	})
	if err != nil {
		err = fmt.Errorf("orchestration: wake %d instances: %w", len(items), err)
		endWakeups(e, done, err, nil)
		return nil, err
	}
	// Counted now that it is committed: a write that lost to another
	// execution's, or that never committed, counts nothing, and the
	// execution that replays the instance afterwards counts what it
	// records.
	for _, x := range writers {
		if !conflicted[x.stream] {
			x.committed(x.ctx, x.pending)
		}
	}
	endWakeups(e, done, nil, conflicted)
	return outcomes, nil
}

// endWakeups ends the wake-up spans of the executions xs (those that
// start one) as their batch's write ended: failed with err, or committed
// but for the streams in conflicted.
func endWakeups(e *Engine, xs []*loaded, err error, conflicted map[string]bool) {
	var end time.Time
	for _, x := range xs {
		if x.span == nil {
			continue
		}
		if end.IsZero() {
			end = e.clock.Now()
		}
		endWakeup(x.execution, err, conflicted[x.stream], end)
	}
}

func anySuspended(xs []*loaded) bool {
	for _, x := range xs {
		if x.suspended {
			return true
		}
	}
	return false
}

// Processor returns a processor of the engine's to-do list: each due item
// is an instance to replay. Subscribe its handler to the passage of time;
// several processors (in several processes) share the instances, one
// instance never on two at once.
//
// It wakes a claimed batch of instances at once (wakeBatch): one query
// for their histories and one transaction for what they recorded and
// their next wake-ups.
func (e *Engine) Processor(opts ...todolist.ProcessorOption) (*todolist.Processor, error) {
	return todolist.NewBatchProcessor(e.list, e.wakeBatch, append([]todolist.ProcessorOption{todolist.WithClock(e.clock)}, opts...)...)
}
