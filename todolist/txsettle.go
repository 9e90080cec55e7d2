package todolist

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
)

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
func (p *Processor) txBatch(ctx context.Context, limit int, res *Result, action func(ctx context.Context, tx *sqlx.Tx, items []Item) ([]error, error)) (n int, err error) {
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
	outcomes, whole := p.decide(ctx, batch, p.cfg.clock.Now(), state, func(ctx context.Context, items []Item) ([]error, error) {
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
	p.reportTx(ctx, batch, outcomes, state, res)
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
	batch, err := p.drv.pickTx(ctx, tx, readyItems{list: l.name, cutoff: sqldb.EncodeTime(cutoff), now: sqldb.EncodeTime(p.cfg.clock.Now()), limit: limit})
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
	if done, err = p.drv.unchangedTx(ctx, tx, l.name, done); err != nil {
		return err
	}
	if conflicts, err = p.drv.unchangedTx(ctx, tx, l.name, conflicts); err != nil {
		return err
	}
	if failed, err = p.drv.unchangedTx(ctx, tx, l.name, failed); err != nil {
		return err
	}
	removed := 0
	if len(done) > 0 {
		if removed, err = p.drv.removeTx(ctx, tx, l.name, done); err != nil {
			return fmt.Errorf("remove done items: %w", err)
		}
	}
	if len(conflicts) > 0 {
		next := sqldb.EncodeTime(res.Cutoff) + 1
		if err := p.drv.conflictTx(ctx, tx, l.name, conflicts, next); err != nil {
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
		recorded, err := p.drv.failTx(ctx, tx, l.name, f, it)
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

// reportTx counts a committed transactional batch in res and tells the
// observer, now that what it reports is durable.
func (p *Processor) reportTx(ctx context.Context, batch []claimed, outcomes []error, state *txState, res *Result) {
	obs := p.cfg.observer
	for i, it := range batch {
		switch err := outcomes[i]; {
		case err == nil:
			res.Done++
			p.list.ins.completed.Add(ctx, 1, p.list.ins.add...)
			if obs.Done != nil {
				obs.Done(p.list.name, it.Item)
			}
		case isConflict(err):
			res.Conflicts++
		}
	}
	ins := &p.list.ins
	for _, f := range state.failed {
		ins.failed.Add(ctx, 1, ins.add...)
		switch {
		case f.item.Parked:
			res.Parked++
			ins.parked.Add(ctx, 1, ins.add...)
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
