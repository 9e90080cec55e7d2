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
// ticker and its sinks: every event goes on to the sinks, and once a
// MinuteHasPassed has been published, the schedules' processor works the
// slots due at that boundary. Each run is published, through the same
// sinks, inside the transaction that records it, so a sink that refuses it
// rolls the firing back and the slot is retried, under the same slot id,
// after a backoff: delivery is at least once and receivers deduplicate by
// the slot id. A slot is fired by the process that holds the ticker's
// lease (only it publishes minutes); the to-do list's claims and the
// unique slot id would keep two from recording it anyway.
//
// The processor runs on the ticker's publishing goroutine, so the next
// boundary waits for the runs due at this one: the events and the runs
// reach a sink in the order they happened.
type firing struct {
	sinks tick.Publisher
	proc  *todolist.Processor
	runs  atomic.Int64 // runs the sinks took
}

// openFiring opens the scheduler of db for "ticker run", creating its
// tables on first use like the ticker's own. Schedules fire on minute
// boundaries: without minute in --units, a database that holds schedules
// is a usage error (firing them an hour or a day late would be worse), and
// one that holds none gets no scheduler (nil).
func openFiring(ctx context.Context, db *sqldb.DB, units []tick.Unit, sinks tick.Publisher, clock clockwork.Clock, logger *slog.Logger) (*firing, error) {
	if !slices.Contains(units, tick.Minute) {
		n, err := countSchedules(ctx, db)
		if err != nil {
			return nil, err
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
	f := &firing{sinks: sinks}
	handler := func(ctx context.Context, _ *sqlx.Tx, run schedule.Run) error {
		if err := sinks.Publish(ctx, run); err != nil {
			return err
		}
		f.runs.Add(1)
		return nil
	}
	s, err := schedule.Open(ctx, db.DB, handler, schedule.WithClock(clock), schedule.WithPublisher(sinks))
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

// Publish implements tick.Publisher: the events go to the sinks, and a
// minute that reached them fires the slots due at its boundary. A failure
// to work the schedules' list (its storage, not a run: failed runs are
// retried by the list) is returned, so the ticker offers the minute again
// (the sinks that took it do not get it twice) and the slots are worked
// again.
func (f *firing) Publish(ctx context.Context, events ...any) error {
	if err := f.sinks.Publish(ctx, events...); err != nil {
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

// process fires the slots due at boundary (capped at the clock's now).
func (f *firing) process(ctx context.Context, boundary time.Time) error {
	if _, err := f.proc.Process(ctx, boundary); err != nil {
		return fmt.Errorf("fire the schedules due at %s: %w", tick.FormatTime(boundary), err)
	}
	return nil
}

// countSchedules counts the stored schedules without creating anything: a
// database without the schedule tables holds none.
func countSchedules(ctx context.Context, db *sqldb.DB) (int, error) {
	tables, err := tablesIn(ctx, db, db.Dialect)
	if err != nil {
		return 0, err
	}
	if !tables[scheduleTable] {
		return 0, nil
	}
	var n int
	if err := db.GetContext(ctx, &n, `SELECT COUNT(*) FROM `+scheduleTable); err != nil {
		return 0, fmt.Errorf("count the schedules: %w", err)
	}
	return n, nil
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
