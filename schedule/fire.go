package schedule

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/timefmt"
	"github.com/passage-of-time/passage/todolist"
)

// slotError stops the set-wise firing of a batch when one of its slots
// fails, so that the batch is undone and fired slot by slot.
type slotError struct {
	index int // in the batch
	err   error
}

func (e *slotError) Error() string { return fmt.Sprintf("slot %d of the batch: %v", e.index, e.err) }
func (e *slotError) Unwrap() error { return e.err }

// fireBatch is the to-do list's transactional batch action: the
// schedules of items are due, and tx holds their items.
//
// A batch fires set-wise, in a handful of statements whatever its size:
// one reads the schedules, one records the runs, one moves the schedules
// on, one moves their items. A statement per slot would cost the most at
// the moment it matters most: when thousands of schedules share a minute.
// Until every handler has returned, nothing says whether a slot fails; so
// when one does, the batch is undone to a savepoint and fired again by
// fireEach, each slot under a savepoint of its own, so that the failure
// undoes its own slot only. The failed slot is not tried again then (its
// handler is called once an attempt), but the handlers of the slots
// before it in the batch are called a second time for the same slot ids:
// the first calls' writes were undone, as after a crash, which Handler
// already allows for.
func (s *Scheduler) fireBatch(ctx context.Context, tx *sqlx.Tx, items []todolist.Item) ([]error, error) {
	now := s.clock.Now()
	if err := s.driver.savepoint(ctx, tx, "schedule_batch"); err != nil {
		return nil, fmt.Errorf("schedule: fire %d slots: %w", len(items), err)
	}
	fs, reports, err := s.fireSet(ctx, tx, items, now)
	outcomes := make([]error, len(items))
	keepEarly(outcomes, fs, now)
	if failed := (*slotError)(nil); errors.As(err, &failed) {
		if err := s.driver.rollbackTo(ctx, tx, "schedule_batch"); err != nil {
			return nil, fmt.Errorf("schedule: fire %d slots: %w", len(items), err)
		}
		outcomes, fs, reports, err = s.fireEach(ctx, tx, items, now, failed)
	} else if err == nil {
		// Released before the items move: rows the transaction locked
		// and a subtransaction changes get a MultiXact on PostgreSQL,
		// which the list's index never takes for dead (see
		// todolist.NewTxBatchProcessor).
		if err = s.driver.release(ctx, tx, "schedule_batch"); err == nil {
			err = s.moveOn(ctx, tx, fs, now)
		}
	}
	if err == nil && s.recordTx != nil {
		for _, r := range reports {
			if err = s.recordTx(ctx, tx, r); err != nil {
				err = fmt.Errorf("record the report of %d slots of %q skipped: %w", r.Count, r.Schedule, err)
				break
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("schedule: fire %d slots: %w", len(items), err)
	}
	s.measureBatch(ctx, fs, reports)
	if len(reports) > 0 && s.publisher != nil {
		todolist.AfterCommit(ctx, func(ctx context.Context) { s.publish(ctx, reports) })
	}
	return outcomes, nil
}

// measureBatch records the metrics of a batch of firings, fs — the runs
// they recorded, and the reports — once the batch's transaction commits.
// It gathers nothing while no instrument records.
func (s *Scheduler) measureBatch(ctx context.Context, fs []firing, reports []SlotsSkipped) {
	if !s.ins.on(ctx) {
		return
	}
	var runs []measured
	for i := range fs {
		if f := &fs[i]; f.fired == 1 {
			runs = append(runs, measured{schedule: f.st.Name, late: f.start.Sub(f.d.due(f.run.Slot)).Seconds()})
		}
	}
	if len(runs) > 0 || len(reports) > 0 {
		s.ins.batch(ctx, runs, reports)
	}
}

// publish sends the batch's reports once its transaction has committed.
func (s *Scheduler) publish(ctx context.Context, reports []SlotsSkipped) {
	if s.publisher == nil {
		return
	}
	for _, r := range reports {
		// The count is stored with the firing; a report that fails is
		// counted (ReportFailures), not retried: retrying the action would
		// delay the schedule's next slot for the sake of a notice.
		if err := s.publisher.Publish(ctx, r); err != nil {
			s.reportFailures.Add(1)
		}
	}
}

// keepEarly sets the outcome of each slot of fs taken before its time
// (earlySlot), in outcomes, which are fs's batch's.
func keepEarly(outcomes []error, fs []firing, now time.Time) {
	for _, f := range fs {
		if f.p.early {
			outcomes[f.index] = notYet(f.first, f.d.due(f.first), now)
		}
	}
}

// fireEach fires items slot by slot in tx, each slot a batch of one
// (fireSet, then moveOn) under a savepoint of its own, so that a failing
// handler undoes its own slot only (its item is retried after a backoff)
// and the batch still costs one commit. It is the way a batch fires once
// fireSet found a slot failing: that slot is not fired again, its outcome
// is failed's. It returns the firings of the slots that stand, with their
// reports.
func (s *Scheduler) fireEach(ctx context.Context, tx *sqlx.Tx, items []todolist.Item, now time.Time, failed *slotError) ([]error, []firing, []SlotsSkipped, error) {
	outcomes := make([]error, len(items))
	var fired []firing
	var reports []SlotsSkipped
	for i, item := range items {
		if i == failed.index {
			outcomes[i] = slotFailed(item, failed.err)
			continue
		}
		if err := s.driver.savepoint(ctx, tx, "schedule_slot"); err != nil {
			return nil, nil, nil, err
		}
		fs, own, err := s.fireSet(ctx, tx, items[i:i+1], now)
		if err == nil {
			err = s.moveOn(ctx, tx, fs, now)
		}
		if err != nil {
			if rerr := s.driver.rollbackTo(ctx, tx, "schedule_slot"); rerr != nil {
				return nil, nil, nil, rerr
			}
			if one := (*slotError)(nil); errors.As(err, &one) {
				err = one.err // the handler's, not the batch of one's
			}
			outcomes[i] = slotFailed(item, err)
		} else {
			fired = append(fired, fs...)
			reports = append(reports, own...)
			keepEarly(outcomes[i:i+1], fs, now)
		}
		if err := s.driver.release(ctx, tx, "schedule_slot"); err != nil {
			return nil, nil, nil, err
		}
	}
	return outcomes, fired, reports, nil
}

func slotFailed(item todolist.Item, err error) error {
	return fmt.Errorf("schedule %q: fire the slot due %s: %w", item.ID, timefmt.Format(item.Due), err)
}

// firing is one due item of a batch on its way through fireSet.
type firing struct {
	index int // in the batch
	item  todolist.Item
	st    state
	d     Definition
	p     plan
	// first is the schedule's next slot, the first the plan looks at.
	first time.Time
	// run is the run to record, zero when the slot fires nothing.
	run Run
	// fired is 1 once run is recorded, 0 when the slot had a run already.
	fired int64
	// start is when run's handler started.
	start time.Time
	// buffered is true when the slot waits behind an open run (BufferOne).
	buffered bool
	// overlapped is the slot an open run made it skip (SkipOverlap).
	overlapped time.Time
}

// fireSet fires the due slots of items, statement by statement for the
// whole batch, up to the handlers: it reads the schedules, plans each one
// (the catch-up policy, the overlap policy, MaxRuns), records the runs
// and calls the handlers; moveOn then moves the schedules on (see
// fireBatch). A single slot fires through it too, as a batch of one
// (fireEach). The first slot to fail fails it with a *slotError.
func (s *Scheduler) fireSet(ctx context.Context, tx *sqlx.Tx, items []todolist.Item, now time.Time) ([]firing, []SlotsSkipped, error) {
	names := make([]string, len(items))
	for i, item := range items {
		names[i] = item.ID
	}
	// Not locked: tx holds their items, which every other writer of a
	// schedule holds first (see load), so none can change them meanwhile.
	states, err := s.driver.schedulesOf(ctx, tx, names)
	if err != nil {
		return nil, nil, err
	}
	fs := make([]firing, 0, len(items))
	var overlapping []string
	for i, item := range items {
		st, found := states[item.ID]
		if !found || st.Paused != 0 {
			continue // deleted or paused: nothing to fire, the item goes
		}
		d, err := s.definition(st)
		if err != nil {
			return nil, nil, &slotError{index: i, err: err}
		}
		first := item.Due // the slot, unless jitter delayed the item
		if st.NextSlot != 0 {
			first = sqldb.DecodeTime(st.NextSlot)
		}
		f := firing{index: i, item: item, st: st, d: d, p: planFor(d, first, now, s.live), first: first}
		if !f.p.fire.IsZero() && d.Overlap != AllowOverlap {
			overlapping = append(overlapping, st.Name)
		}
		fs = append(fs, f)
	}
	open, err := s.driver.openRunsOf(ctx, tx, overlapping)
	if err != nil {
		return nil, nil, err
	}
	var reports []SlotsSkipped
	for i := range fs {
		f := &fs[i]
		if f.p.skipped > 0 {
			reports = append(reports, SlotsSkipped{Schedule: f.st.Name, From: f.p.skipFrom, To: f.p.skipTo, Count: f.p.skipped, Policy: policyName(f.d.CatchUp)})
		}
		if !f.p.fire.IsZero() && open[f.st.Name] > 0 {
			switch f.d.Overlap {
			case SkipOverlap:
				reports = append(reports, SlotsSkipped{Schedule: f.st.Name, From: f.p.fire, To: f.p.fire, Count: 1, Policy: "overlap"})
				f.p.skipped++
				f.overlapped, f.p.fire = f.p.fire, time.Time{}
			case BufferOne:
				f.buffered = true
				continue
			}
		}
		if !f.p.fire.IsZero() && (f.d.MaxRuns == 0 || f.st.Runs < int64(f.d.MaxRuns)) {
			f.run = Run{
				RunID:    newRunID(),
				SlotID:   SlotID(f.st.Name, f.p.fire),
				Schedule: f.st.Name,
				Slot:     f.p.fire,
				FiredAt:  now,
				Attempt:  f.item.Attempts + 1,
				Command:  f.st.Command,
				Payload:  f.st.Payload,
			}
		}
	}
	runs := make([]Run, 0, len(fs))
	for i := range fs {
		if fs[i].run.RunID != "" {
			runs = append(runs, fs[i].run)
		}
	}
	recorded, err := s.driver.insertRuns(ctx, tx, runs)
	if err != nil {
		return nil, nil, err
	}
	var running []string
	for i := range fs {
		f := &fs[i]
		if f.run.RunID == "" {
			continue
		}
		if !recorded[f.run.SlotID] {
			f.run = Run{} // another replica, or an earlier attempt, ran it
			continue
		}
		f.fired = 1
		f.start = s.clock.Now()
		if err := s.callHandler(ctx, tx, f.run, f.start); err != nil {
			if !errors.Is(err, ErrStillRunning) {
				return nil, nil, &slotError{index: f.index, err: err}
			}
			running = append(running, f.run.RunID)
		}
	}
	if err := s.driver.markRunning(ctx, tx, running); err != nil {
		return nil, nil, err
	}
	return fs, reports, nil
}

// moveOn stores where each schedule of fs stands after the firing and
// makes its item due at its next slot.
func (s *Scheduler) moveOn(ctx context.Context, tx *sqlx.Tx, fs []firing, now time.Time) error {
	moves := make([]move, 0, len(fs))
	later := make([]todolist.NewItem, 0, len(fs))
	var earlier []todolist.NewItem
	for i := range fs {
		f := &fs[i]
		if f.p.early {
			continue // kept as it is: its outcome (earlySlot) has it taken again
		}
		if f.buffered {
			// Keep the slot; look again soon, or when Finish says.
			moves = append(moves, move{name: f.st.Name, skipped: f.p.skipped, next: encodeSlot(f.p.fire)})
			later = append(later, todolist.NewItem{ID: f.st.Name, Due: now.Add(bufferRecheck)})
			continue
		}
		after := f.p.fire
		if after.IsZero() {
			after = now // every slot so far was skipped
			if !f.overlapped.IsZero() {
				after = f.overlapped
			}
		}
		next := f.d.nextAfter(after, f.st.Runs+f.fired)
		moves = append(moves, move{name: f.st.Name, runs: f.fired, skipped: f.p.skipped, next: encodeSlot(next)})
		if next.IsZero() {
			continue // ended: the processor removes the item
		}
		item := todolist.NewItem{ID: f.st.Name, Due: f.d.due(next)}
		if item.Due.After(f.item.Due) {
			later = append(later, item) // a later due time moves the item
		} else {
			// A re-add never brings an item forward, and the item the
			// processor holds would then be settled and gone: the schedule
			// would never fire again. Make a new item instead (after Finish
			// pulled the item to now, a catch-up's next slot is earlier).
			earlier = append(earlier, item)
		}
	}
	if err := s.driver.recordFired(ctx, tx, moves); err != nil {
		return err
	}
	if err := s.list.AddManyTx(ctx, tx, later); err != nil {
		return err
	}
	for _, item := range earlier {
		if err := s.list.RemoveTx(ctx, tx, item.ID); err != nil {
			return err
		}
		if err := s.list.AddTx(ctx, tx, item.ID, item.Due); err != nil {
			return err
		}
	}
	return nil
}

// bufferRecheck is how often a slot buffered behind an open run is looked
// at again, in case Finish is never called (a lost worker's run stays
// open until someone finishes it).
const bufferRecheck = time.Minute

// ReportFailures counts SlotsSkipped reports the publisher refused; the
// skipped slots themselves are counted in each schedule's state.
func (s *Scheduler) ReportFailures() int64 { return s.reportFailures.Load() }

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
	if err := s.callHandler(ctx, tx, r, s.clock.Now()); err != nil {
		if !errors.Is(err, ErrStillRunning) {
			return Run{}, err
		}
		if err := s.driver.markRunning(ctx, tx, []string{r.RunID}); err != nil {
			return Run{}, err
		}
	}
	return r, nil
}

// callHandler calls the handler on r, starting at start, in the run's
// span (tracing.go). It turns a handler's panic into an error, so a bad
// run is retried and parked like any failure instead of taking the
// process down.
func (s *Scheduler) callHandler(ctx context.Context, tx *sqlx.Tx, r Run, start time.Time) (err error) {
	ctx, span := s.tr.startRun(ctx, r, start)
	if span != nil {
		// Deferred first, so that it sees a panic turned into err.
		defer func() { endRun(span, err, s.clock.Now()) }()
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("schedule: handler panicked on %s: %v", r.SlotID, p)
		}
	}()
	return s.handler(ctx, tx, r)
}

// Processor returns a processor of the schedules' to-do list that fires
// due slots; subscribe its handler to the passage of time, e.g.
// bus.Subscribe(b, todolist.Handler[tick.MinuteHasPassed](p)). Its
// options (batch size, attempts, backoff, time budget) apply to runs: a
// failing run is retried with backoff and parked after the maximum
// attempts. It is a transactional batch processor
// ([todolist.NewTxBatchProcessor]): a batch of slots is taken, fired and
// moved on in one transaction, so it takes no lease.
//
// A schedule behind with the catch-up policy tick.All fires one missed
// slot, the oldest, each time its item is taken, and its item is then due
// at once for the next; the processor takes it again in the same Process
// call ([todolist.WithUntilDry]), so one call at a boundary catches every
// schedule up to it, within the time budget and WithMaxItems. Before, a
// schedule N slots behind needed N calls, and a caller that made one a
// tick stayed behind for good.
func (s *Scheduler) Processor(opts ...todolist.ProcessorOption) (*todolist.Processor, error) {
	base := []todolist.ProcessorOption{todolist.WithClock(s.clock), todolist.WithUntilDry()}
	return todolist.NewTxBatchProcessor(s.list, s.fireBatch, append(base, opts...)...)
}
