package schedule

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/jmoiron/sqlx"
	"go.opentelemetry.io/otel"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/todolist"
)

// Scheduler keeps schedules in a database and fires their slots. Each
// schedule's next slot is one item of a to-do list: a Processor over that
// list (Scheduler.Processor), driven by the passage of time like any
// other, fires what is due. A Scheduler is safe for concurrent use, and
// any number of processes may open one on the same database: a batch of
// due slots fires in the transaction that takes their items (locked on
// PostgreSQL, under the write lock on SQLite), which keeps two of them
// from firing one schedule at once, and the run's slot id keeps a slot
// from being recorded twice.
type Scheduler struct {
	db      *sqlx.DB
	driver  driver
	list    *todolist.List
	handler Handler
	options
	// ins and tr record the metrics and trace the runs (telemetry.go,
	// tracing.go), with the providers of the options.
	ins *instruments
	tr  tracing

	mu       sync.Mutex
	declared map[string]Definition // by Sync in this process, if their text does not read back
	specs    map[string]Spec       // read back from stored text (parsed)

	reportFailures atomic.Int64
}

// Open returns the scheduler of db, creating its tables on first use. The
// handler receives every run.
func Open(ctx context.Context, db *sqlx.DB, handler Handler, opts ...Option) (*Scheduler, error) {
	if db == nil {
		return nil, ErrNilDB
	}
	if handler == nil {
		return nil, ErrNilHandler
	}
	s := &Scheduler{db: db, handler: handler, options: defaults(), declared: map[string]Definition{}, specs: map[string]Spec{}}
	for _, opt := range opts {
		if err := opt(&s.options); err != nil {
			return nil, fmt.Errorf("schedule: open: %w", err)
		}
	}
	if s.meters == nil {
		s.meters = otel.GetMeterProvider()
	}
	if s.tracers == nil {
		s.tracers = otel.GetTracerProvider()
	}
	s.ins = newInstruments(s.meters, !s.unnamedMetrics)
	s.tr = newTracing(s.tracers)
	if err := sqldb.Migrate(ctx, db, component, migrations); err != nil {
		return nil, fmt.Errorf("schedule: open: %w", err)
	}
	list, err := todolist.Open(ctx, db, listName, todolist.WithListClock(s.clock),
		todolist.WithMeterProvider(s.meters), todolist.WithTracerProvider(s.tracers))
	if err != nil {
		return nil, fmt.Errorf("schedule: open: %w", err)
	}
	s.list = list
	s.driver = newDriver(db)
	return s, nil
}

// ToDo returns the to-do list that holds each schedule's next slot.
func (s *Scheduler) ToDo() *todolist.List { return s.list }

// load reads a schedule's row in tx and locks it: its item first, then
// its row (the driver's lockSchedule), so that a firing, a Sync and a
// Pause of the same schedule take turns and lock in one order: a batch of
// firings holds its items from the moment it takes them, and only then
// writes the schedules' rows.
func (s *Scheduler) load(ctx context.Context, tx *sqlx.Tx, name string) (state, bool, error) {
	if err := s.list.HoldTx(ctx, tx, name); err != nil {
		return state{}, false, err
	}
	return s.driver.lockSchedule(ctx, tx, name)
}

func (s *Scheduler) inTx(ctx context.Context, f func(tx *sqlx.Tx) error) error {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		return errors.Join(err, tx.Rollback())
	}
	return tx.Commit()
}
