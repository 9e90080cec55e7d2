package cli

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/timefmt"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/tick"
	"github.com/passage-of-time/passage/todolist"
)

// How long a failing run is retried: a minute after the first failure,
// doubling up to scheduleBackoffMax, and parked (logged, no longer fired
// until reactivated) after scheduleMaxAttempts — about a week of a
// receiver refusing every attempt, since the processor is woken once a
// minute anyway.
const (
	scheduleBackoffBase = time.Minute
	scheduleBackoffMax  = 10 * time.Minute
	scheduleMaxAttempts = 1008
)

// firing fires the stored schedules of "ticker run". It sits between the
// ticker and the outbox: every event is recorded in the outbox, and once
// a MinuteHasPassed is recorded, the schedules' processor works the slots
// due at that boundary. Each run is recorded in the outbox inside the
// transaction that records it (runHandler), and each skip report inside
// the transaction that counted it, so that a run or a report is delivered
// if and only if its firing commits, after the commit, by the relays: a
// firing that fails or is undone leaves nothing to deliver, and nothing
// is posted while a transaction is open. A slot is fired by the process
// that holds the ticker's lease (only it publishes minutes); the to-do
// list's claims and the unique slot id would keep two from recording it
// anyway.
type firing struct {
	out  *delivery
	proc *todolist.Processor
	runs atomic.Int64 // runs recorded (a batch fired again counts again)
}

// runHandler is the schedule.Handler of every command that fires runs:
// the run's record (a ScheduleRun, keyed by its slot id, in the stream of
// its schedule) is written to the outbox in the firing transaction.
func runHandler(out *delivery, runs *atomic.Int64) schedule.Handler {
	return recordingHandler(out, runs, nil)
}

// recordingHandler is runHandler that also tells ran of each run once its
// firing committed (at once for a run fired outside a processor's batch).
func recordingHandler(out *delivery, runs *atomic.Int64, ran func(schedule.Run)) schedule.Handler {
	return func(ctx context.Context, tx *sqlx.Tx, run schedule.Run) error {
		if err := out.write(ctx, tx, run); err != nil {
			return err
		}
		if runs != nil {
			runs.Add(1)
		}
		if ran != nil && !todolist.AfterCommit(ctx, func(context.Context) { ran(run) }) {
			ran(run)
		}
		return nil
	}
}

// firingOf is what the firing of "ticker run" works with: its database,
// the units it publishes, the outbox, its clock, its logger and its
// figures.
type firingOf struct {
	db      *sqldb.DB
	units   []tick.Unit
	out     *delivery
	clock   clockwork.Clock
	logger  *slog.Logger
	metrics *metrics
}

// openFiring opens the scheduler of db for "ticker run", creating its
// tables on first use like the ticker's own. Schedules fire on minute
// boundaries: without minute in --units, a database that holds schedules
// is a usage error (firing them an hour or a day late would be worse), and
// one that holds none gets no scheduler (nil). opts go to schedule.Open
// (the command's telemetry providers).
func openFiring(ctx context.Context, o firingOf, opts ...schedule.Option) (*firing, error) {
	db, units, out, clock, logger, m := o.db, o.units, o.out, o.clock, o.logger, o.metrics
	if !slices.Contains(units, tick.Minute) {
		// Counted without migrating: a database without the schedules'
		// tables holds none, and is left without them.
		n, err := schedule.Count(ctx, db)
		if err != nil {
			return nil, fmt.Errorf("count the schedules: %w", err)
		}
		if n > 0 {
			noun := "schedules, which fire"
			if n == 1 {
				noun = "schedule, which fires"
			}
			return nil, usagef("--units %s: the database holds %d %s on minute boundaries: add minute to --units, or pass --schedules=false to run without firing them", joinUnits(units), n, noun)
		}
		return nil, nil
	}
	f := &firing{out: out}
	s, err := schedule.Open(ctx, db.DB, recordingHandler(out, &f.runs, m.ranRun), append([]schedule.Option{schedule.WithClock(clock),
		schedule.WithSkipsRecordedTx(func(ctx context.Context, tx *sqlx.Tx, r schedule.SlotsSkipped) error {
			return out.write(ctx, tx, r)
		})}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("open the schedules: %w", err)
	}
	f.proc, err = s.Processor(
		todolist.WithBackoff(scheduleBackoffBase, scheduleBackoffMax),
		todolist.WithMaxAttempts(scheduleMaxAttempts),
		todolist.WithObserver(todolist.Observer{
			Failed: func(_ string, item todolist.Item, err error) {
				logger.Warn("schedule run failed; the slot is retried under the same slot id",
					"schedule", item.ID, "attempt", item.Attempts, "retry_at", item.NextAttempt, "err", err)
			},
			Parked: func(_ string, item todolist.Item, err error) {
				logger.Error("schedule run failed too often; the schedule is parked and fires no more",
					"schedule", item.ID, "attempts", item.Attempts, "err", err)
			},
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("open the schedules: %w", err)
	}
	return f, nil
}

// Publish implements tick.Publisher: the events are recorded in the
// outbox, and a minute recorded fires the slots due at its boundary. A
// failure to work the schedules' list (its storage, not a run: failed
// runs are retried by the list) is returned, so the ticker offers the
// minute again (recorded once: its key is there already) and the slots
// are worked again.
func (f *firing) Publish(ctx context.Context, events ...any) error {
	if err := f.out.Publish(ctx, events...); err != nil {
		return err
	}
	for _, e := range events {
		if m, ok := e.(tick.MinuteHasPassed); ok {
			if err := f.process(ctx, m.At); err != nil {
				return err
			}
		}
	}
	return nil
}

// process fires the slots due at boundary (capped at the clock's now),
// and wakes the relays for what committed.
func (f *firing) process(ctx context.Context, boundary time.Time) error {
	defer f.out.notify()
	// One call: a schedule behind catches up inside it (the scheduler's
	// processor takes an item again while it is due; schedule's
	// Processor). What its time budget leaves is due at the next boundary.
	if _, err := f.proc.Process(ctx, boundary); err != nil {
		return fmt.Errorf("fire the schedules due at %s: %w", timefmt.Format(boundary), err)
	}
	return nil
}

func joinUnits(units []tick.Unit) string {
	s := ""
	for i, u := range units {
		if i > 0 {
			s += ","
		}
		s += string(u)
	}
	return s
}
