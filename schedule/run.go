package schedule

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// Run is one firing of a schedule, as its Handler sees it.
type Run struct {
	// RunID is fresh for every run: the run's own correlation id.
	RunID string
	// SlotID is the schedule's name and the slot's instant: the same for
	// every attempt of the same slot on every replica, so a receiver can
	// deduplicate by it. A manual run's slot id names the run instead.
	SlotID string
	// Schedule is the schedule's name.
	Schedule string
	// Slot is the instant the run was planned for; FiredAt when it fired.
	Slot, FiredAt time.Time
	// Attempt counts from 1; it grows when a run failed and is retried.
	Attempt int
	// Manual is true for a run started by Trigger, outside the plan.
	Manual bool
	// Command and Payload are the schedule's.
	Command string
	Payload []byte
}

// Handler receives each run of every schedule, inside the transaction that
// records the run and moves the schedule to its next slot: what it writes
// with tx (an outbox row, an event) commits with the run or not at all. An
// error rolls everything back; the slot is tried again after a backoff,
// with the same SlotID. A run may be attempted more than once (a crash
// after the handler's side effects outside tx, or another slot of its
// batch failing after it: the batch is then fired again slot by slot),
// never recorded twice.
//
// Keep it short: it hands the command over, it does not do the work.
// The transaction is open while it runs, and on SQLite it holds the
// database's write lock. Work that takes long goes to a queue or another
// service; the handler then returns ErrStillRunning, and whoever finishes
// the work calls Scheduler.Finish, so that the schedule's Overlap policy
// knows the run is still open meanwhile.
type Handler func(ctx context.Context, tx *sqlx.Tx, run Run) error

// record records a run of slot and hands it to the handler, in tx: the
// run it made, or a zero Run when the slot had one already (another
// replica, or an earlier attempt that committed).
func (s *Scheduler) record(ctx context.Context, tx *sqlx.Tx, st state, slot time.Time, attempt int) (Run, error) {
	return s.recordRun(ctx, tx, Run{
		RunID:    newRunID(),
		SlotID:   SlotID(st.Name, slot),
		Schedule: st.Name,
		Slot:     slot,
		FiredAt:  s.clock.Now(),
		Attempt:  attempt,
		Command:  st.Command,
		Payload:  st.Payload,
	})
}

// recordRun records r and hands it to the handler, in tx, leaving it open
// when the handler says it goes on; it returns a zero Run when r's slot
// had a run already.
func (s *Scheduler) recordRun(ctx context.Context, tx *sqlx.Tx, r Run) (Run, error) {
	recorded, err := s.driver.insertRuns(ctx, tx, []Run{r})
	if err != nil || !recorded[r.SlotID] {
		return Run{}, err
	}
	if err := s.callHandler(ctx, tx, r); err != nil {
		if !errors.Is(err, ErrStillRunning) {
			return Run{}, err
		}
		if err := s.driver.markRunning(ctx, tx, []string{r.RunID}); err != nil {
			return Run{}, err
		}
	}
	return r, nil
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

// callHandler turns a handler's panic into an error, so a bad run is
// retried and parked like any failure instead of taking the process down.
func (s *Scheduler) callHandler(ctx context.Context, tx *sqlx.Tx, r Run) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("schedule: handler panicked on %s: %v", r.SlotID, p)
		}
	}()
	return s.handler(ctx, tx, r)
}

// SlotID is the deterministic id of a schedule's slot: its name and the
// slot's instant in UTC.
func SlotID(name string, slot time.Time) string {
	return name + "@" + slot.UTC().Format(time.RFC3339Nano)
}

// newRunID returns a fresh run id: a UUID of version 7, whose first bits
// are the time, so that the runs of a minute go to the end of the run id
// index instead of all over it (random ids made recording a run markedly
// slower when many schedules share a minute).
func newRunID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString() // no time to be had: random will do
	}
	return id.String()
}
