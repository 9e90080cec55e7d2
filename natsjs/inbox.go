package natsjs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// Inbox records, in a SQL database (SQLite or PostgreSQL), which messages
// each consumer has handled, in the same transaction as the handler's
// effect: a message delivered again — its consumer died between the
// commit and the ack, or the server restarted — finds its row and changes
// nothing. Make handlers with Once. An Inbox is safe for concurrent use.
type Inbox struct {
	db    *sqlx.DB
	drv   driver
	clock clockwork.Clock
}

// InboxOption configures an Inbox in OpenInbox.
type InboxOption func(*Inbox) error

// WithInboxClock sets the clock whose time is recorded as when a message
// was handled (default: the real clock), which Forget compares.
func WithInboxClock(clock clockwork.Clock) InboxOption {
	return func(in *Inbox) error {
		if clock == nil {
			return fmt.Errorf("%w: WithInboxClock: clock must not be nil", ErrInvalidOption)
		}
		in.clock = clock
		return nil
	}
}

// OpenInbox returns the inbox kept in db, creating its table
// (natsjs_inbox) the first time.
func OpenInbox(ctx context.Context, db *sqlx.DB, opts ...InboxOption) (*Inbox, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: OpenInbox: nil database", ErrInvalidOption)
	}
	in := &Inbox{db: db, drv: newDriver(db), clock: clockwork.NewRealClock()}
	for _, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("%w: OpenInbox: nil option", ErrInvalidOption)
		}
		if err := opt(in); err != nil {
			return nil, err
		}
	}
	if err := sqldb.Migrate(ctx, db, component, migrations); err != nil {
		return nil, fmt.Errorf("natsjs: open inbox: %w", err)
	}
	return in, nil
}

// Once returns a handler, for bus.Subscribe, that runs h at most once per
// message for consumer: in a transaction of the inbox's database that
// first records (consumer, message id), and is committed only if h
// succeeds. A message recorded already is skipped (nil, nothing run); a
// failed h rolls its row back with its effect, so the redelivery runs it
// again. Do the handler's writes through tx: they are then exactly once,
// and on SQLite, whose transaction holds the database's write lock until
// it ends, a write through another connection to the same file would
// wait for it.
//
// The message id is that of the message the event came from (see
// MessageFrom; for a boundary, its ID, unit and boundary); an event
// published on the bus by other means is recorded under its own ID()
// when it has one — a tick.Event does, so a local ticker's boundaries and
// the stream's are the same messages — and refused with ErrNoMessageID
// otherwise.
//
// consumer names the handler in the inbox: give each handler that must
// run once a name of its own (the durable consumer's name when it has
// one such handler), since two sharing one would skip each other's
// messages.
func Once[E any](in *Inbox, consumer string, h func(ctx context.Context, tx *sqlx.Tx, event E) error) (func(context.Context, E) error, error) {
	switch {
	case in == nil:
		return nil, fmt.Errorf("%w: Once: nil inbox", ErrInvalidOption)
	case consumer == "":
		return nil, fmt.Errorf("%w: Once: empty consumer name", ErrInvalidOption)
	case h == nil:
		return nil, fmt.Errorf("%w: Once: nil handler", ErrInvalidOption)
	}
	return func(ctx context.Context, event E) error {
		id, err := messageID(ctx, event)
		if err != nil {
			return err
		}
		return in.once(ctx, consumer, id, func(tx *sqlx.Tx) error { return h(ctx, tx, event) })
	}, nil
}

// messageID is the id an event is recorded under: its message's, or its
// own.
func messageID(ctx context.Context, event any) (string, error) {
	if m, ok := MessageFrom(ctx); ok {
		return m.ID, nil
	}
	if e, ok := event.(interface{ ID() string }); ok {
		return e.ID(), nil
	}
	return "", fmt.Errorf("%w: %T came from no Consumer and has no ID method", ErrNoMessageID, event)
}

// once runs fn in a transaction that records (consumer, id), unless the
// inbox holds it already.
func (in *Inbox) once(ctx context.Context, consumer, id string, fn func(tx *sqlx.Tx) error) (err error) {
	tx, err := in.db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("natsjs: inbox of %s: begin for %s: %w", consumer, id, err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, ignoreDone(tx.Rollback()))
		}
	}()
	fresh, err := in.drv.record(ctx, tx, consumer, id, sqldb.EncodeTime(in.clock.Now()))
	if err != nil {
		return fmt.Errorf("natsjs: inbox of %s: record %s: %w", consumer, id, err)
	}
	if !fresh {
		return ignoreDone(tx.Rollback())
	}
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("natsjs: inbox of %s: commit %s: %w", consumer, id, err)
	}
	return nil
}

// ignoreDone drops the error of rolling back a transaction that h ended
// itself.
func ignoreDone(err error) error {
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}

// Handled reports whether consumer's handler has handled the message id.
func (in *Inbox) Handled(ctx context.Context, consumer, id string) (bool, error) {
	ok, err := in.drv.handled(ctx, in.db, consumer, id)
	if err != nil {
		return false, fmt.Errorf("natsjs: inbox of %s: look up %s: %w", consumer, id, err)
	}
	return ok, nil
}

// Forget deletes consumer's rows of messages handled before before and
// returns how many it deleted. Forget only what can no longer come back:
// messages acked, on a stream that will not deliver them again (older
// than its WithMaxAge, or a durable consumer that is never reset).
func (in *Inbox) Forget(ctx context.Context, consumer string, before time.Time) (int64, error) {
	if err := sqldb.CheckTime(before); err != nil {
		return 0, fmt.Errorf("natsjs: inbox of %s: forget: %w", consumer, err)
	}
	n, err := in.drv.forget(ctx, in.db, consumer, sqldb.EncodeTime(before))
	if err != nil {
		return 0, fmt.Errorf("natsjs: inbox of %s: forget before %s: %w", consumer, before.Format(time.RFC3339), err)
	}
	return n, nil
}
