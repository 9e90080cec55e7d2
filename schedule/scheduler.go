package schedule

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/tick"
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
	db        *sqlx.DB
	driver    driver
	list      *todolist.List
	handler   Handler
	clock     clockwork.Clock
	publisher tick.Publisher
	recordTx  func(ctx context.Context, tx *sqlx.Tx, r SlotsSkipped) error
	live      time.Duration

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
	s := &Scheduler{db: db, handler: handler, clock: clockwork.NewRealClock(), live: 2 * time.Minute, declared: map[string]Definition{}, specs: map[string]Spec{}}
	for _, opt := range opts {
		if err := opt(s); err != nil {
			return nil, fmt.Errorf("schedule: open: %w", err)
		}
	}
	if err := sqldb.Migrate(ctx, db, "schedule", migrations); err != nil {
		return nil, fmt.Errorf("schedule: open: %w", err)
	}
	list, err := todolist.Open(ctx, db, listName, todolist.WithListClock(s.clock))
	if err != nil {
		return nil, fmt.Errorf("schedule: open: %w", err)
	}
	s.list = list
	s.driver = driverFor(db)
	return s, nil
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
// at once for the next: a processor's Process does not take an item again
// in the same call, so a schedule N slots behind needs N calls. Call
// Process again at the same boundary while its Result claimed anything
// (as "ticker run" does), or a schedule behind catches up one slot a tick
// and stays behind.
func (s *Scheduler) Processor(opts ...todolist.ProcessorOption) (*todolist.Processor, error) {
	return todolist.NewTxBatchProcessor(s.list, s.fireBatch, append([]todolist.ProcessorOption{todolist.WithClock(s.clock)}, opts...)...)
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
