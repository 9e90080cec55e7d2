package schedule

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/timefmt"
)

// List returns every stored schedule, by name, as ReadSchedules does.
func (s *Scheduler) List(ctx context.Context) ([]Stored, error) {
	out, err := listSchedules(ctx, s.driver, s.db)
	if err != nil {
		return nil, fmt.Errorf("schedule: list: %w", err)
	}
	return out, nil
}

// Pause stops a schedule from firing until Resume: its next slot is
// taken off the to-do list. Pausing a paused schedule changes nothing.
func (s *Scheduler) Pause(ctx context.Context, name string) error {
	return s.change(ctx, "pause", name, func(tx *sqlx.Tx, st state) error {
		if err := s.driver.setPaused(ctx, tx, name, true, 0); err != nil {
			return err
		}
		return s.list.RemoveTx(ctx, tx, name)
	})
}

// Resume lets a paused schedule fire again from its first slot after now:
// the slots that passed while it was paused are not fired, nor reported
// skipped (pausing said so). Resuming a running schedule changes nothing.
func (s *Scheduler) Resume(ctx context.Context, name string) error {
	return s.change(ctx, "resume", name, func(tx *sqlx.Tx, st state) error {
		if st.Paused == 0 {
			return nil
		}
		d, err := s.definition(st)
		if err != nil {
			return err
		}
		next := d.nextAfter(s.clock.Now(), st.Runs)
		if err := s.driver.setPaused(ctx, tx, name, false, encodeSlot(next)); err != nil {
			return err
		}
		if next.IsZero() {
			return nil
		}
		return s.list.AddTx(ctx, tx, name, d.due(next))
	})
}

// Delete removes a schedule and its next slot; its runs stay recorded.
func (s *Scheduler) Delete(ctx context.Context, name string) error {
	err := s.change(ctx, "delete", name, func(tx *sqlx.Tx, st state) error {
		if err := s.driver.deleteSchedule(ctx, tx, name); err != nil {
			return err
		}
		return s.list.RemoveTx(ctx, tx, name)
	})
	if err == nil {
		s.mu.Lock()
		delete(s.declared, name)
		s.mu.Unlock()
		s.ins.forget(name)
	}
	return err
}

// Trigger runs a schedule now, outside its plan: a run with its own run
// id and a slot id that names it, handed to the handler like any other.
// The plan is untouched: the next slot still fires when due, and the run
// does not count toward MaxRuns. A paused schedule can be triggered.
func (s *Scheduler) Trigger(ctx context.Context, name string) (Run, error) {
	var r Run
	err := s.change(ctx, "trigger", name, func(tx *sqlx.Tx, st state) error {
		now := s.clock.Now()
		var err error
		r, err = s.manualRun(ctx, tx, st, now)
		return err
	})
	if err == nil && r.RunID != "" {
		s.ins.ran(ctx, name)
	}
	return r, err
}

func (s *Scheduler) manualRun(ctx context.Context, tx *sqlx.Tx, st state, now time.Time) (Run, error) {
	r := Run{RunID: newRunID(), Schedule: st.Name, Slot: now, FiredAt: now, Attempt: 1, Manual: true, Command: st.Command, Payload: st.Payload}
	r.SlotID = st.Name + "@manual/" + r.RunID
	return s.recordRun(ctx, tx, r)
}

// change runs f on a schedule's row in one transaction.
func (s *Scheduler) change(ctx context.Context, verb, name string, f func(tx *sqlx.Tx, st state) error) error {
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		st, found, err := s.load(ctx, tx, name)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%w: %q", ErrUnknownSchedule, name)
		}
		return f(tx, st)
	})
	if err != nil {
		return fmt.Errorf("schedule: %s %q: %w", verb, name, err)
	}
	return nil
}

// maxBackfill bounds the slots one Backfill fires.
const maxBackfill = 10_000

// Backfill runs the slots of a schedule in (from, to] that have no run
// yet, oldest first, each in a transaction of its own with its planned
// slot id, as if it had fired on time: for a schedule added after the
// fact, or slots a catch-up policy skipped. Slots already run are left
// alone, so backfilling twice runs nothing twice. It does not move the
// plan, and its runs do not count toward MaxRuns. Slots after the
// schedule's Until are not its slots and are not run. Like Trigger, it is
// asked for by name: a paused schedule's slots are run too, and it stays
// paused. to must not be in the future; at most 10,000 slots. It returns
// the runs it made.
func (s *Scheduler) Backfill(ctx context.Context, name string, from, to time.Time) ([]Run, error) {
	if to.After(s.clock.Now()) {
		return nil, fmt.Errorf("schedule: backfill %q: %s is in the future", name, timefmt.Format(to))
	}
	var st state
	err := s.change(ctx, "backfill", name, func(_ *sqlx.Tx, got state) error { st = got; return nil })
	if err != nil {
		return nil, err
	}
	d, err := s.definition(st)
	if err != nil {
		return nil, fmt.Errorf("schedule: backfill %q: %w", name, err)
	}
	last := to
	if !d.Until.IsZero() && d.Until.Before(last) {
		last = d.Until // the schedule has no slot after Until
	}
	var slots []time.Time
	for at := d.Spec.Next(from); !at.IsZero() && !at.After(last); at = d.Spec.Next(at) {
		if len(slots) == maxBackfill {
			return nil, fmt.Errorf("schedule: backfill %q: more than %d slots in (%s, %s]", name, maxBackfill, timefmt.Format(from), timefmt.Format(to))
		}
		slots = append(slots, at)
	}
	var runs []Run
	for _, slot := range slots {
		var r Run
		err := s.inTx(ctx, func(tx *sqlx.Tx) error {
			var err error
			r, err = s.record(ctx, tx, st, slot, 1)
			return err
		})
		if err != nil {
			return runs, fmt.Errorf("schedule: backfill %q at %s: %w", name, timefmt.Format(slot), err)
		}
		if r.RunID != "" {
			runs = append(runs, r)
			s.ins.ran(ctx, name)
		}
	}
	return runs, nil
}

// Finish closes a run its handler left open (ErrStillRunning). A slot
// buffered behind it (BufferOne) becomes due at once; a next slot whose
// jittered time has not come stays due at that time. Finishing a
// finished run changes nothing; an unknown run id is an error wrapping
// ErrUnknownRun.
func (s *Scheduler) Finish(ctx context.Context, runID string) error {
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		schedule, finished, found, err := s.driver.runOf(ctx, tx, runID)
		if err == nil && !found {
			return fmt.Errorf("%w: %q", ErrUnknownRun, runID)
		} else if err != nil || finished {
			return err
		}
		if err := s.driver.finishRun(ctx, tx, runID); err != nil {
			return err
		}
		st, found, err := s.load(ctx, tx, schedule)
		if err != nil || !found || st.Paused != 0 || st.NextSlot == 0 {
			return err
		}
		// A slot has come when its due time — the slot plus its jitter —
		// has, as firing reckons (planFor). One whose jittered time is
		// still ahead is not buffered: its item stays due then; pulling
		// it to now would find nothing due and move past it, losing it.
		// A buffered slot's jittered time has come (it was fired but
		// held back), so it becomes due now.
		now := s.clock.Now()
		jitter := Definition{Name: st.Name, Jitter: time.Duration(st.Jitter)}
		if jitter.due(sqldb.DecodeTime(st.NextSlot)).After(now) {
			return nil // nothing buffered: the next slot has not come
		}
		// Remove first: a re-add never brings an item forward.
		if err := s.list.RemoveTx(ctx, tx, st.Name); err != nil {
			return err
		}
		return s.list.AddTx(ctx, tx, st.Name, now)
	})
	if err != nil {
		return fmt.Errorf("schedule: finish run %q: %w", runID, err)
	}
	return nil
}
