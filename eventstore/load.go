package eventstore

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// Load returns the events of stream with version fromVersion or later, in
// order; fromVersion 0 or 1 reads the whole stream. A stream without events
// returns none and no error. An event whose type name is not registered
// fails the load with [ErrUnknownEventType].
func (s *Store) Load(ctx context.Context, stream string, fromVersion int64) ([]Recorded, error) {
	return s.load(ctx, s.db, stream, fromVersion)
}

// LoadTx is [Store.Load] inside the caller's transaction, as
// [Store.LoadManyTx] is LoadMany: it reads what tx sees, on tx's
// connection. After an append in tx took the stream's turn, what it reads
// stays the stream's latest until tx ends.
func (s *Store) LoadTx(ctx context.Context, tx *sqlx.Tx, stream string, fromVersion int64) ([]Recorded, error) {
	if tx == nil {
		return nil, fmt.Errorf("%w: load stream %q: transaction must not be nil", ErrInvalidArgument, stream)
	}
	if err := s.sameDatabase(tx); err != nil {
		return nil, fmt.Errorf("%w: load stream %q: %w", ErrInvalidArgument, stream, err)
	}
	return s.load(ctx, tx, stream, fromVersion)
}

func (s *Store) load(ctx context.Context, q sqlx.QueryerContext, stream string, fromVersion int64) ([]Recorded, error) {
	if stream == "" {
		return nil, fmt.Errorf("%w: stream name must not be empty", ErrInvalidArgument)
	}
	if fromVersion < 0 {
		return nil, fmt.Errorf("%w: load stream %q from version %d: versions start at 1", ErrInvalidArgument, stream, fromVersion)
	}
	rows, err := s.driver.load(ctx, q, stream, fromVersion)
	if err != nil {
		return nil, fmt.Errorf("eventstore: load stream %q: %w", stream, err)
	}
	defer rows.Close()
	var out []Recorded
	for rows.Next() {
		r := Recorded{Stream: stream}
		var (
			data []byte
			at   int64
		)
		if err := rows.Scan(&r.Position, &r.Version, &r.Type, &data, &at); err != nil {
			return nil, fmt.Errorf("eventstore: load stream %q: %w", stream, err)
		}
		r.RecordedAt = sqldb.DecodeTime(at)
		if r.Event, err = s.registry.decode(r.Type, data); err != nil {
			return nil, fmt.Errorf("eventstore: load stream %q: version %d: %w", stream, r.Version, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("eventstore: load stream %q: %w", stream, err)
	}
	return out, nil
}

// Version returns the version of the last event of stream, 0 when it has
// none.
func (s *Store) Version(ctx context.Context, stream string) (int64, error) {
	v, err := s.driver.version(ctx, s.db, stream)
	if err != nil {
		return 0, fmt.Errorf("eventstore: version of stream %q: %w", stream, err)
	}
	return v, nil
}
