package eventstore

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// maxLoadMany bounds the streams of one LoadMany query; more are read in
// several.
const maxLoadMany = 5000

// LoadMany returns the events of each of streams, whole and in order, read
// in one query per 5,000 streams instead of one per stream: what a
// processor deciding a batch of aggregates needs. A stream without events
// maps to no entry. Stream names must not be empty; repeated names are
// read once.
func (s *Store) LoadMany(ctx context.Context, streams []string) (map[string][]Recorded, error) {
	return s.loadMany(ctx, s.db, streams)
}

// LoadManyTx is [Store.LoadMany] inside the caller's transaction, as
// [Store.AppendManyTx] is AppendMany: tx must be on the store's database.
// It reads what tx sees — on PostgreSQL's default READ COMMITTED the
// latest committed events, on SQLite those and tx's own — on tx's
// connection, so a caller holding a transaction needs no second one: on a
// pool of one connection (SQLite's ":memory:", a pool limited with
// SetMaxOpenConns(1)) LoadMany would wait for tx to end, for ever.
func (s *Store) LoadManyTx(ctx context.Context, tx *sqlx.Tx, streams []string) (map[string][]Recorded, error) {
	if tx == nil {
		return nil, fmt.Errorf("%w: load many: transaction must not be nil", ErrInvalidArgument)
	}
	if err := s.sameDatabase(tx); err != nil {
		return nil, fmt.Errorf("%w: load many: %w", ErrInvalidArgument, err)
	}
	return s.loadMany(ctx, tx, streams)
}

func (s *Store) loadMany(ctx context.Context, q sqlx.QueryerContext, streams []string) (map[string][]Recorded, error) {
	out := make(map[string][]Recorded, len(streams))
	for i, name := range streams {
		if name == "" {
			return nil, fmt.Errorf("%w: load many: stream %d has an empty name", ErrInvalidArgument, i)
		}
	}
	for start := 0; start < len(streams); start += maxLoadMany {
		if err := s.loadChunk(ctx, q, streams[start:min(start+maxLoadMany, len(streams))], out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *Store) loadChunk(ctx context.Context, q sqlx.QueryerContext, streams []string, out map[string][]Recorded) error {
	rows, err := s.driver.loadMany(ctx, q, streams)
	if err != nil {
		return fmt.Errorf("eventstore: load %d streams: %w", len(streams), err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			r    Recorded
			data []byte
			at   int64
		)
		if err := rows.Scan(&r.Stream, &r.Position, &r.Version, &r.Type, &data, &at); err != nil {
			return fmt.Errorf("eventstore: load %d streams: %w", len(streams), err)
		}
		r.RecordedAt = sqldb.DecodeTime(at)
		if r.Event, err = s.registry.decode(r.Type, data); err != nil {
			return fmt.Errorf("eventstore: load stream %q: version %d: %w", r.Stream, r.Version, err)
		}
		out[r.Stream] = append(out[r.Stream], r)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("eventstore: load %d streams: %w", len(streams), err)
	}
	return nil
}
