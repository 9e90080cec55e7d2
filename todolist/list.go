package todolist

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// List is one named to-do list. Every list lives in the same table of its
// database, separated by name, so a database holds any number of lists.
//
// A List is safe for concurrent use, and several processes may open the same
// list at once.
type List struct {
	db   *sqlx.DB
	name string
	q    queries
	// drv runs the list's statements in which the databases differ (its
	// processors' are their own, see Processor.drv).
	drv   listDriver
	clock clockwork.Clock
	// meters and tracers are the OpenTelemetry providers of the list
	// and its processors (nil until Open: the global ones); ins are the
	// instruments made with meters, tr the spans' tracer.
	meters  metric.MeterProvider
	tracers trace.TracerProvider
	ins     instruments
	tr      tracing
	// addChunk overrides the number of items a statement of AddMany
	// writes, when positive; tests set it small to cross chunks cheaply.
	addChunk int
}

// ListOption configures a [List]. An option with an unusable value makes
// [Open] fail with [ErrInvalidOption].
type ListOption func(*List) error

// WithListClock sets the clock the list reads "now" with (default: the real
// clock): whether [List.Get] reports a claim as live, and the default clock
// of the list's processors. Tests pass a fake clock.
func WithListClock(c clockwork.Clock) ListOption {
	return func(l *List) error {
		if c == nil {
			return invalid("WithListClock", "the clock must not be nil")
		}
		l.clock = c
		return nil
	}
}

// WithMeterProvider sets the OpenTelemetry meter provider the list and
// its processors record their metrics with (default: the global one,
// otel.GetMeterProvider(), read when the list is opened — a global
// provider installed later is used as well, as the API's global
// delegates). Every instrument has one attribute, "list", the list's
// name:
//
//   - passage.todolist.items.added (counter, {item}): the items of Add,
//     AddTx, AddMany and AddManyTx calls that succeeded (an ID given
//     twice to one AddMany counts once), whether or not a call changed
//     the item (an Add is idempotent); a Tx form counts when its
//     statement succeeds, before the caller's transaction commits;
//   - passage.todolist.items.completed (counter, {item}): actions that
//     returned nil, as [Observer].Done is told ([Result].Done);
//   - passage.todolist.items.failed (counter, {item}): failed attempts
//     recorded, the one that parks an item included ([Result].Failed
//     plus [Result].Parked); version conflicts are not failures;
//   - passage.todolist.items.parked (counter, {item}): items parked, once
//     each time one is;
//   - passage.todolist.action.lateness (histogram, s): from an item's due
//     time to the start of its action (of its batch's action, for a
//     batch), each time one starts; a retried item is late by its
//     backoff as well;
//   - passage.todolist.backlog (gauge, {item}): the list's pending items
//     (not parked, due or not, as [Stats].Pending), read from the
//     database when the metrics are collected, never while items are
//     worked: one query on the index of unparked items for every list
//     opened on the database with the provider (a list opened again
//     adds nothing).
//
// The counters count what this process did; the totals of every process
// are kept in the database ([Stats]). With the API's no-op provider, or
// the global one while no SDK is installed, recording costs no
// allocation.
func WithMeterProvider(mp metric.MeterProvider) ListOption {
	return func(l *List) error {
		if mp == nil {
			return invalid("WithMeterProvider", "the meter provider must not be nil")
		}
		l.meters = mp
		return nil
	}
}

// WithTracerProvider sets the OpenTelemetry tracer provider the list's
// processors trace their actions with (default: the global one,
// otel.GetTracerProvider(), read when the list is opened; an SDK
// installed as the global provider later is used as well).
//
// Each [Action] runs in a span of its own, "todolist.action <list>", and
// each call of a [BatchAction] or [TxBatchAction] in a span
// "todolist.batch <list>": a new trace, linked to the span of the ctx
// the processor was given — the tick's that caused the pass, when the
// bus handler carries one. The span starts when the action does and
// holds the list's name, the item's ID, due time, lateness (seconds from
// the due time to the start) and failed attempts so far (for a batch:
// its size, and the due time and lateness of its earliest item); a
// failure sets its status to Error and records the error (for a batch,
// each failed item's, with its ID), a version conflict is marked as one.
// The action's ctx carries the span, so what it traces is its child.
//
// With the API's no-op provider, or the global one while no SDK is
// installed, no span is started, and actions cost no allocation more.
func WithTracerProvider(tp trace.TracerProvider) ListOption {
	return func(l *List) error {
		if tp == nil {
			return invalid("WithTracerProvider", "the tracer provider must not be nil")
		}
		l.tracers = tp
		return nil
	}
}

// Open returns the list called name in db, creating the shared table on
// first use (component "todolist" of the database's migrations).
//
// The name is data: it is bound as a query parameter and never spliced into
// SQL, so any text is safe. It must be non-empty UTF-8 of at most
// [MaxNameLength] bytes without control characters, so that it prints
// cleanly in logs and status output, and neither "." nor "..", which no
// URL path can carry to the dashboard; anything else fails with
// [ErrInvalidName].
func Open(ctx context.Context, db *sqlx.DB, name string, opts ...ListOption) (*List, error) {
	if db == nil {
		return nil, fmt.Errorf("todolist: open: %w: db must not be nil", ErrInvalidArgument)
	}
	if err := validateNewName(name); err != nil {
		return nil, err
	}
	l := &List{db: db, name: name, clock: clockwork.NewRealClock()}
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(l); err != nil {
			return nil, fmt.Errorf("todolist: open %q: %w", name, err)
		}
	}
	if err := sqldb.Migrate(ctx, db, component, migrations); err != nil {
		return nil, fmt.Errorf("todolist: open %q: %w", name, err)
	}
	l.q, l.drv = newQueries(db), newDriver(db)
	if l.meters == nil {
		l.meters = otel.GetMeterProvider()
	}
	l.ins = newInstruments(l.meters, l.db, l.name)
	if l.tracers == nil {
		l.tracers = otel.GetTracerProvider()
	}
	l.tr = newTracing(l.tracers, l.name)
	return l, nil
}

// Name returns the list's name.
func (l *List) Name() string { return l.name }

// DB returns the database the list lives in.
func (l *List) DB() *sqlx.DB { return l.db }

// Add puts id on the list, due at due, on the list's own database.
// See [List.AddTx] for the rules.
func (l *List) Add(ctx context.Context, id string, due time.Time) error {
	return l.AddTx(ctx, l.db, id, due)
}

// AddTx is [List.Add] on ext, typically the caller's *sqlx.Tx, so that the
// list changes in the same transaction as the events it is projected from
// and cannot drift from them: a rolled-back transaction leaves the list as
// it was. ext must belong to the list's database.
//
// Add is an idempotent upsert, so replaying a projection is harmless:
//   - a new ID is added, due at due;
//   - the same or an earlier due time for an existing ID changes nothing
//     (an old event delivered again cannot pull a deadline back, and a
//     parked item stays parked);
//   - a later due time moves the item and makes it new work: attempts,
//     last error and parking are reset. A claim in flight is kept, so no
//     other processor starts the item while the one working the old
//     deadline still runs; that one then leaves the item on the list
//     (neither removing it nor recording its failure) and releases it.
//
// To bring an item forward, Remove it and Add it again (in one transaction).
// That makes a new item. On SQLite a processor still working the removed
// one is not stopped, so the action may run for the new item before the
// old run has finished; on PostgreSQL the batch's claim holds the ID, so
// the new item waits for that run to end. Actions must be idempotent
// anyway (see [Action]).
func (l *List) AddTx(ctx context.Context, ext sqlx.ExtContext, id string, due time.Time) error {
	if ext == nil {
		return fmt.Errorf("todolist: add to %q: %w: ext must not be nil", l.name, ErrInvalidArgument)
	}
	if err := validateID(id); err != nil {
		return fmt.Errorf("todolist: add to %q: %w", l.name, err)
	}
	if err := validateTime("due time", due); err != nil {
		return fmt.Errorf("todolist: add %q to %q: %w", id, l.name, err)
	}
	touch(ctx, l.name, id)
	at := sqldb.EncodeTime(due)
	if _, err := ext.ExecContext(ctx, l.q.add, l.name, id, at, at); err != nil {
		return fmt.Errorf("todolist: add %q to %q: %w", id, l.name, err)
	}
	l.ins.added.Add(ctx, 1, l.ins.add...)
	return nil
}

// Remove takes id off the list on the list's own database; removing an ID
// that is not there is not an error.
func (l *List) Remove(ctx context.Context, id string) error {
	return l.RemoveTx(ctx, l.db, id)
}

// RemoveTx is [List.Remove] on ext, typically the caller's *sqlx.Tx. A
// processor working the item when it is removed finds it gone and moves on.
//
// When ctx is the one a [Processor] gave the [Action] working this very
// item (this list, this ID), or the [BatchAction] working a batch that
// holds it, or derives from it, the removal completes the item: if it deletes the item, it adds one to the list's Completed total
// ([Stats]) on ext, in the same transaction, so the completion commits or
// rolls back with the removal. This is how an action whose events a
// projection of its own list applies counts its item, even if its
// processor dies before its batch ends. Any other removal — another item's
// action, an event handled outside any action — counts nothing. On
// PostgreSQL the count holds the lock on the list's row of totals until
// ext's transaction ends, so the list's other actions and batch ends wait
// for it there: commit soon after the removal, as an event store hook,
// which runs last, does.
func (l *List) RemoveTx(ctx context.Context, ext sqlx.ExtContext, id string) error {
	if ext == nil {
		return fmt.Errorf("todolist: remove from %q: %w: ext must not be nil", l.name, ErrInvalidArgument)
	}
	if err := validateID(id); err != nil {
		return fmt.Errorf("todolist: remove from %q: %w", l.name, err)
	}
	touch(ctx, l.name, id)
	if !workingOn(ctx, l.name, id) {
		if _, err := ext.ExecContext(ctx, l.q.remove, l.name, id); err != nil {
			return fmt.Errorf("todolist: remove %q from %q: %w", id, l.name, err)
		}
		return nil
	}
	if err := l.drv.removeCompleted(ctx, ext, l.name, id); err != nil {
		return fmt.Errorf("todolist: remove %q from %q and count it completed: %w", id, l.name, err)
	}
	return nil
}

// Get returns the item with id, or an error wrapping [ErrNotFound].
func (l *List) Get(ctx context.Context, id string) (Item, error) {
	rows, err := l.drv.get(ctx, l.db, l.name, id)
	items, err := l.scan(l.clock.Now(), rows, err)
	if err != nil {
		return Item{}, fmt.Errorf("todolist: get %q from %q: %w", id, l.name, err)
	}
	if len(items) == 0 {
		return Item{}, fmt.Errorf("todolist: get %q from %q: %w", id, l.name, ErrNotFound)
	}
	return items[0], nil
}

// Due returns up to limit items a processor could claim at now (not parked,
// not backing off, not held by a live claim), in the order processors claim
// them: by NextAttempt, then ID. (A processor then works each claimed
// batch by due time, then ID; the orders differ only for items retried
// after a failure or a version conflict.)
func (l *List) Due(ctx context.Context, now time.Time, limit int) ([]Item, error) {
	if err := validateTime("now", now); err != nil {
		return nil, fmt.Errorf("todolist: due items of %q: %w", l.name, err)
	}
	if limit <= 0 {
		return nil, fmt.Errorf("todolist: due items of %q: %w: %d, must be positive", l.name, ErrInvalidLimit, limit)
	}
	at := sqldb.EncodeTime(now)
	rows, err := l.drv.due(ctx, l.db, readyItems{list: l.name, cutoff: at, now: at, limit: limit})
	items, err := l.scan(now, rows, err)
	if err != nil {
		return nil, fmt.Errorf("todolist: due items of %q: %w", l.name, err)
	}
	return items, nil
}

// Parked returns up to limit parked items, earliest due first, with the
// error that parked them.
func (l *List) Parked(ctx context.Context, limit int) ([]Item, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("todolist: parked items of %q: %w: %d, must be positive", l.name, ErrInvalidLimit, limit)
	}
	rows, err := l.db.QueryContext(ctx, l.q.parked, l.name, limit)
	items, err := l.scan(l.clock.Now(), rows, err)
	if err != nil {
		return nil, fmt.Errorf("todolist: parked items of %q: %w", l.name, err)
	}
	return items, nil
}

// Reactivate gives a parked item a fresh start: attempts and last error are
// cleared and it is due again at its due time, so the next tick takes it.
// Reactivating an item that is not parked changes nothing; an unknown ID
// fails with [ErrNotFound].
func (l *List) Reactivate(ctx context.Context, id string) error {
	res, err := l.db.ExecContext(ctx, l.q.reactivate, l.name, id)
	if err != nil {
		return fmt.Errorf("todolist: reactivate %q in %q: %w", id, l.name, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("todolist: reactivate %q in %q: %w", id, l.name, err)
	} else if n > 0 {
		return nil
	}
	if _, err := l.Get(ctx, id); err != nil {
		return fmt.Errorf("todolist: reactivate: %w", err)
	}
	return nil
}

// scan reads the items of rows, or returns err, judging their claims live
// or lapsed at now.
func (l *List) scan(now time.Time, rows *sql.Rows, err error) ([]Item, error) {
	if err != nil {
		return nil, err
	}
	items, _, err := scanItems(rows, now, false)
	return items, err
}

// HoldTx locks the row of the item id, if the list has it, until ext's
// transaction ends, on PostgreSQL: a transactional batch then skips the
// item, and one that already took it is waited for. On SQLite, whose
// write transactions exclude each other, it does nothing. Code that
// changes what an item stands for (the schedule behind it, say) holds the
// item first, so that it and the batches of a [TxBatchAction] lock their
// rows in one order: the item, then the rest.
func (l *List) HoldTx(ctx context.Context, ext sqlx.ExtContext, id string) error {
	if err := l.drv.hold(ctx, ext, l.name, id); err != nil {
		return fmt.Errorf("todolist: hold %q of %q: %w", id, l.name, err)
	}
	return nil
}
