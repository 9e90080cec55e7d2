package eventstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// Recorded is an event as the store holds it.
type Recorded struct {
	// Stream is the stream the event belongs to.
	Stream string
	// Version is the event's place in its stream, from 1.
	Version int64
	// Position is the event's place among all events in the store; it
	// grows with every append but may have gaps.
	Position int64
	// Type is the name the event's Go type is registered under.
	Type string
	// Event is the decoded value, of the registered Go type (not a pointer).
	Event any
	// RecordedAt is when the event was appended, by the store's clock, in UTC.
	RecordedAt time.Time
}

// Publisher receives the events of every append after it commits. Its
// signature is the bus's Publish, so a bus can be passed as is.
type Publisher interface {
	// Publish hands over events, in the order they were appended.
	Publish(ctx context.Context, events ...any) error
}

// TxHook runs inside an append's transaction, after the events are
// inserted and before commit, with the events as recorded. It must use tx
// (not another connection) for its writes so they commit or roll back with
// the events. An error or a panic aborts the append: nothing is stored and
// the error is returned by the append.
type TxHook func(ctx context.Context, tx sqlx.ExtContext, recorded []Recorded) error

// Store appends events to streams and reads them back. It is safe for
// concurrent use, by many goroutines and by many processes sharing the
// database.
type Store struct {
	db        *sqlx.DB
	dialect   sqldb.Dialect
	registry  *Registry
	clock     clockwork.Clock
	publisher Publisher
	hooks     []TxHook
	driver    driver
}

// Option configures a [Store]. Options validate their argument and make
// [Open] fail with [ErrInvalidArgument] when it is unusable.
type Option func(*Store) error

// WithClock sets the clock that stamps RecordedAt. The default is the real
// clock.
func WithClock(clock clockwork.Clock) Option {
	return func(s *Store) error {
		if clock == nil {
			return fmt.Errorf("%w: WithClock: clock must not be nil", ErrInvalidArgument)
		}
		s.clock = clock
		return nil
	}
}

// WithPublisher sets where [Store.Append] publishes events after commit.
// Without it nothing is published.
func WithPublisher(p Publisher) Option {
	return func(s *Store) error {
		if p == nil {
			return fmt.Errorf("%w: WithPublisher: publisher must not be nil", ErrInvalidArgument)
		}
		s.publisher = p
		return nil
	}
}

// WithInTransaction adds a hook run inside every append's transaction, both
// [Store.Append] and [Store.AppendTx], so a projection (a to-do list, a read
// model) commits atomically with the events it is built from. Hooks run in
// the order they were added; the first error stops the append.
func WithInTransaction(hook TxHook) Option {
	return func(s *Store) error {
		if hook == nil {
			return fmt.Errorf("%w: WithInTransaction: hook must not be nil", ErrInvalidArgument)
		}
		s.hooks = append(s.hooks, hook)
		return nil
	}
}

// Open returns a store on db, creating or upgrading its schema (the table
// eventstore_events, recorded as component "eventstore" in
// passage_migrations). db may be SQLite (mattn/go-sqlite3, driver "sqlite3")
// or PostgreSQL (pgx's database/sql driver, "pgx"); the caller keeps owning
// it and closes it after the store is no longer used.
//
// On SQLite, open db with immediate transactions ("_txlock=immediate") and
// a busy timeout, as passage's own helpers do, so concurrent appenders queue
// for the write lock rather than fail with "database is locked".
//
// registry names the event types the store can append and decode.
func Open(ctx context.Context, db *sqlx.DB, registry *Registry, opts ...Option) (*Store, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: db must not be nil", ErrInvalidArgument)
	}
	if registry == nil {
		return nil, fmt.Errorf("%w: registry must not be nil", ErrInvalidArgument)
	}
	s := &Store{
		db:       db,
		dialect:  sqldb.DialectOf(db),
		registry: registry,
		clock:    clockwork.NewRealClock(),
		driver:   newDriver(db),
	}
	for _, opt := range opts {
		if err := opt(s); err != nil {
			return nil, fmt.Errorf("eventstore: open: %w", err)
		}
	}
	if err := sqldb.Migrate(ctx, db, component, migrations); err != nil {
		return nil, fmt.Errorf("eventstore: open: %w", err)
	}
	return s, nil
}

// sameDatabase checks that a caller's transaction is on the store's
// database, for the methods that join one (AppendTx and the like).
func (s *Store) sameDatabase(tx *sqlx.Tx) error {
	if d := sqldb.DialectOf(tx); d != s.dialect {
		return fmt.Errorf("transaction is on %s, the store on %s", d, s.dialect)
	}
	return nil
}
