package eventstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// AppendResult is the outcome of a successful append.
type AppendResult struct {
	// Version is the stream's version after the append: the version of its
	// last event (unchanged when no events were given).
	Version int64
	// Recorded are the appended events as stored, in order.
	Recorded []Recorded
}

// Append adds events to the end of stream if expected holds, in one
// transaction that also runs the [WithInTransaction] hooks, and then
// publishes the events to the [WithPublisher] publisher.
//
// Events must be values (or pointers to values) of types registered in the
// store's [Registry]. With no events, Append only checks expected against
// the stream and returns its version.
//
// Appenders of one stream take turns, in one process or many, so [Any] and
// [StreamExists] appends never conflict with each other: each lands after
// the ones before it. When expected does not hold, the error is a
// [*VersionConflictError] (errors.Is [ErrWrongExpectedVersion]) and
// nothing is stored. When the events were committed but publishing failed,
// Append returns the result together with an error matching [ErrPublish]:
// do not append again.
func (s *Store) Append(ctx context.Context, stream string, expected ExpectedVersion, events ...any) (AppendResult, error) {
	res, err := s.appendCommitted(ctx, stream, expected, events)
	if err != nil {
		return AppendResult{}, err
	}
	return res, s.Publish(ctx, res.Recorded)
}

// raceRetries bounds how many times Append starts over when the (stream,
// version) constraint refuses an Any or StreamExists append. Appenders
// taking turns never get there; a writer that does not take its turn (one
// inserting rows itself, or reading from an older snapshot, see
// [Store.AppendTx]) can make it happen, and every retry means one of its
// appends landed.
const raceRetries = 10

func (s *Store) appendCommitted(ctx context.Context, stream string, expected ExpectedVersion, events []any) (AppendResult, error) {
	for attempt := 1; ; attempt++ {
		res, err := s.appendInTx(ctx, stream, expected, events)
		var conflict *VersionConflictError
		if !errors.As(err, &conflict) || !conflict.raced {
			return res, err
		}
		// The whole transaction starts over, hooks included: on
		// PostgreSQL the refused insert has aborted it.
		if expected.holdsAfterRace() && attempt <= raceRetries && ctx.Err() == nil {
			continue
		}
		// Read the winner's version outside the aborted transaction so
		// the error says where the stream is.
		if actual, verr := s.Version(ctx, stream); verr == nil {
			conflict.Actual, conflict.raced = actual, false
		}
		return AppendResult{}, err
	}
}

func (s *Store) appendInTx(ctx context.Context, stream string, expected ExpectedVersion, events []any) (AppendResult, error) {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return AppendResult{}, fmt.Errorf("eventstore: append to stream %q: begin: %w", stream, err)
	}
	defer func() { _ = tx.Rollback() }()
	res, err := s.append(ctx, tx, stream, expected, events)
	if err != nil {
		return AppendResult{}, err
	}
	if err := tx.Commit(); err != nil {
		return AppendResult{}, fmt.Errorf("eventstore: append to stream %q: commit: %w", stream, err)
	}
	return res, nil
}

// AppendTx is [Store.Append] inside the caller's transaction, for callers
// that write more than events atomically. tx must be on the store's
// database. The [WithInTransaction] hooks run in it too; nothing is
// published, because the store cannot know whether tx commits: after a
// successful commit, publish with [Store.Publish].
//
// Appending takes the stream's turn until tx ends (on PostgreSQL a
// transaction-scoped advisory lock; on SQLite the immediate transaction
// holds the write lock anyway): other appenders of the stream wait for tx
// to commit or roll back, so keep it short. Taking turns relies on tx
// reading the latest committed version, as PostgreSQL's default READ
// COMMITTED does; in a REPEATABLE READ or SERIALIZABLE transaction that
// read earlier, even an [Any] append can lose a race. After an error, roll
// tx back: on PostgreSQL a lost race has aborted it.
func (s *Store) AppendTx(ctx context.Context, tx *sqlx.Tx, stream string, expected ExpectedVersion, events ...any) (AppendResult, error) {
	if tx == nil {
		return AppendResult{}, fmt.Errorf("%w: append to stream %q: transaction must not be nil", ErrInvalidArgument, stream)
	}
	if err := s.sameDatabase(tx); err != nil {
		return AppendResult{}, fmt.Errorf("%w: append to stream %q: %w", ErrInvalidArgument, stream, err)
	}
	return s.append(ctx, tx, stream, expected, events)
}

// Publish hands the events of recorded, in order, to the store's
// [Publisher], if it has one. Append calls it after commit; callers of
// [Store.AppendTx] call it after their own commit. Errors, including a
// panicking publisher, match [ErrPublish].
func (s *Store) Publish(ctx context.Context, recorded []Recorded) error {
	if s.publisher == nil || len(recorded) == 0 {
		return nil
	}
	events := make([]any, len(recorded))
	for i, r := range recorded {
		events[i] = r.Event
	}
	err := safely(func() error { return s.publisher.Publish(ctx, events...) })
	if err != nil {
		first := recorded[0]
		return fmt.Errorf("%w: stream %q versions %d-%d: %w", ErrPublish, first.Stream, first.Version, recorded[len(recorded)-1].Version, err)
	}
	return nil
}

type encoded struct {
	name  string
	data  []byte
	value any
}

func (s *Store) append(ctx context.Context, tx *sqlx.Tx, stream string, expected ExpectedVersion, events []any) (AppendResult, error) {
	if stream == "" {
		return AppendResult{}, fmt.Errorf("%w: stream name must not be empty", ErrInvalidArgument)
	}
	if !expected.valid() {
		return AppendResult{}, fmt.Errorf("%w: append to stream %q: %s", ErrInvalidArgument, stream, expected)
	}
	// Encode before touching the database: a bad event fails fast and
	// never holds the write lock.
	batch := make([]encoded, len(events))
	for i, e := range events {
		name, data, value, err := s.registry.encode(e)
		if err != nil {
			return AppendResult{}, fmt.Errorf("eventstore: append to stream %q: event %d: %w", stream, i, err)
		}
		batch[i] = encoded{name, data, value}
	}

	// Take the stream's turn before reading its version, so the version
	// read is the one the events go after. A check without events needs
	// no turn.
	if len(batch) > 0 {
		if err := s.driver.takeTurn(ctx, tx, stream); err != nil {
			return AppendResult{}, fmt.Errorf("eventstore: append to stream %q: wait for the stream's turn: %w", stream, err)
		}
	}
	current, err := s.driver.version(ctx, tx, stream)
	if err != nil {
		return AppendResult{}, fmt.Errorf("eventstore: append to stream %q: read version: %w", stream, err)
	}
	if !expected.allows(current) {
		return AppendResult{}, &VersionConflictError{Stream: stream, Expected: expected, Actual: current}
	}
	if len(batch) == 0 {
		return AppendResult{Version: current}, nil
	}

	at := sqldb.EncodeTime(s.clock.Now())
	recorded := make([]Recorded, len(batch))
	for i, e := range batch {
		r := Recorded{Stream: stream, Version: current + int64(i) + 1, Type: e.name, Event: e.value, RecordedAt: sqldb.DecodeTime(at)}
		r.Position, err = s.driver.insert(ctx, tx, eventRow{stream, r.Version, e.name, string(e.data)}, at)
		if s.driver.isUniqueViolation(err) {
			return AppendResult{}, &VersionConflictError{Stream: stream, Expected: expected, Actual: r.Version, raced: true}
		}
		if err != nil {
			return AppendResult{}, fmt.Errorf("eventstore: append to stream %q: insert version %d: %w", stream, r.Version, err)
		}
		recorded[i] = r
	}
	for i, hook := range s.hooks {
		if err := safely(func() error { return hook(ctx, tx, recorded) }); err != nil {
			return AppendResult{}, fmt.Errorf("eventstore: append to stream %q: in-transaction hook %d: %w", stream, i, err)
		}
	}
	return AppendResult{Version: recorded[len(recorded)-1].Version, Recorded: recorded}, nil
}

// safely runs f, turning a panic into a [*PanicError] so one misbehaving
// hook or publisher cannot take the caller down with it.
func safely(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = newPanicError(r)
		}
	}()
	return f()
}
