package todolist

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
)

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
		// A short pick means nothing more was due (WithUntilDry: an
		// empty one).
		if stopped || p.cfg.dry(len(batch), limit) {
			return nil
		}
	}
}

// claim takes up to limit items due at cutoff under a fresh token, and
// returns them earliest due first, with the end of their lease and
// whether the claim left a record for the settle to delete.
func (p *Processor) claim(ctx context.Context, cutoff time.Time, limit int) (batch []claimed, token string, leaseEnd time.Time, record bool, err error) {
	l := p.list
	token = uuid.NewString()
	now := p.cfg.clock.Now()
	leaseEnd = now.Add(p.cfg.lease)
	ready := readyItems{list: l.name, cutoff: sqldb.EncodeTime(cutoff), now: sqldb.EncodeTime(now), limit: limit}
	batch, record, err = p.drv.claim(ctx, l.db, ready, token, leaseEnd)
	if err != nil {
		return nil, "", time.Time{}, false, fmt.Errorf("todolist: claim due items of %q: %w", l.name, err)
	}
	sortBatch(batch)
	return batch, token, leaseEnd, record, nil
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
	rows               doneRows
	failures, parkings int
	record, lapse      bool
}

func (d batchDone) empty() bool {
	return !d.record && len(d.rows.ids) == 0 && d.failures == 0 && d.parkings == 0
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

// succeeded records that an item's action returned nil: the item is settled
// with its batch, counted and reported.
func (p *Processor) succeeded(ctx context.Context, done *batchDone, it claimed, res *Result) {
	done.rows.add(it)
	res.Done++
	p.list.ins.completed.Add(ctx, 1, p.list.ins.add...)
	if p.cfg.observer.Done != nil {
		p.cfg.observer.Done(p.list.name, it.Item)
	}
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
	recorded, err := p.drv.fail(ctx, l.db, claimRef{l.name, token}, c, it, sqldb.EncodeTime(now))
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
	l.ins.failed.Add(ctx, 1, l.ins.add...)
	if it.Parked {
		done.parkings++
		res.Parked++
		l.ins.parked.Add(ctx, 1, l.ins.add...)
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

// release frees the conflicting items of a batch until just past the
// cutoff, in one statement, and the items left unstarted, in another.
func (p *Processor) release(ctx context.Context, token string, conflicts, unstarted []claimed, res *Result) error {
	l := p.list
	if len(conflicts) > 0 {
		// Released just past the cutoff: the next tick takes them, this
		// one does not spin on them.
		next := sqldb.EncodeTime(res.Cutoff) + 1
		if err := p.drv.releaseConflicts(ctx, l.db, claimRef{l.name, token}, conflicts, next, sqldb.EncodeTime(p.cfg.clock.Now())); err != nil {
			return fmt.Errorf("todolist: release conflicting items of %q: %w", l.name, err)
		}
	}
	if len(unstarted) > 0 {
		n, err := p.drv.releaseUnstarted(ctx, l.db, claimRef{l.name, token}, unstarted)
		if err != nil {
			return fmt.Errorf("todolist: release unstarted items of %q: %w", l.name, err)
		}
		res.Released += n
	}
	return nil
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
		n, held, err = p.drv.settle(ctx, l.db, settlement{
			claimRef: claimRef{l.name, done.token}, done: done.rows,
			failures: done.failures, parkings: done.parkings, lapse: done.lapse,
			holds: func() bool { return done.lease.holds(p.cfg.clock.Now()) == nil },
			now:   p.cfg.clock.Now,
		})
	}
	if err != nil {
		return fmt.Errorf("todolist: remove done items of %q and count the batch: %w", l.name, err)
	}
	if !held {
		res.Lost += len(done.rows.ids)
		return nil
	}
	return p.released(ctx, done, n, res)
}

// count adds completed and the batch's failures and parkings to the
// list's totals, unless all are zero.
func (p *Processor) count(ctx context.Context, ext sqlx.ExtContext, completed int, done batchDone) error {
	return countBatch(ctx, ext, p.list.q.count, totals{p.list.name, completed, done.failures, done.parkings})
}

// released counts the done items that were not removed (n were) as lost
// outcomes, and releases those among them that a re-add left under the
// batch's claim, which hid them until now.
func (p *Processor) released(ctx context.Context, done batchDone, n int, res *Result) error {
	lost := len(done.rows.ids) - n
	if lost == 0 {
		return nil
	}
	res.Lost += lost
	l := p.list
	if err := p.drv.releaseReadded(ctx, l.db, claimRef{l.name, done.token}, done.rows.ids); err != nil {
		return fmt.Errorf("todolist: release re-added items of %q: %w", l.name, err)
	}
	return nil
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
