package tick

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/timefmt"
)

// SQLStore is a CursorStore in SQLite or PostgreSQL, shared by every replica
// that opens the same database. It keeps one row per unit (tick_cursors) and
// one lease row (tick_lease); instants are stored as sqldb.EncodeTime values.
type SQLStore struct {
	d driver
}

var _ CursorStore = (*SQLStore)(nil)

// NewSQLStore returns a store on db, creating its tables (component "tick")
// when they do not exist. db is any handle opened on SQLite
// (mattn/go-sqlite3) or PostgreSQL (pgx's "pgx" driver); the caller keeps
// ownership and closes it.
//
// Open SQLite through sqldb.Open: its connections leave the pool once SQLite
// opened them read-only (the file or disk was read-only for a while), so
// the ticker's writes, which fail meanwhile (see Ticker.Health), succeed
// again once the file is writable. A handle from sqlx.Open("sqlite3", …)
// may keep such a connection, and fail, for good.
func NewSQLStore(ctx context.Context, db *sqlx.DB) (*SQLStore, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: NewSQLStore: db must not be nil", ErrInvalidOption)
	}
	if err := sqldb.Migrate(ctx, db, component, migrations); err != nil {
		return nil, fmt.Errorf("tick: create cursor tables: %w", err)
	}
	return &SQLStore{d: newDriver(db)}, nil
}

// Cursor implements CursorStore.
func (s *SQLStore) Cursor(ctx context.Context, unit Unit) (time.Time, error) {
	ns, ok, err := s.d.cursor(ctx, unit)
	if err != nil {
		return time.Time{}, fmt.Errorf("tick: load %s cursor: %w", unit, err)
	}
	if !ok {
		return time.Time{}, nil
	}
	return sqldb.DecodeTime(ns), nil
}

// Advance implements CursorStore. The write and both checks are one
// statement, so a replica that lost the lease between its check and its
// write cannot slip through.
func (s *SQLStore) Advance(ctx context.Context, unit Unit, from, to time.Time, term int64) error {
	if err := sqldb.CheckTime(to); err != nil {
		return fmt.Errorf("tick: advance %s cursor: %w", unit, err)
	}
	var (
		moved bool
		err   error
	)
	if from.IsZero() {
		moved, err = s.d.createCursor(ctx, unit, sqldb.EncodeTime(to), term)
	} else {
		moved, err = s.d.moveCursor(ctx, unit, sqldb.EncodeTime(from), sqldb.EncodeTime(to), term)
	}
	if err != nil || moved {
		if err != nil {
			return fmt.Errorf("tick: advance %s cursor to %s: %w", unit, timefmt.Format(to), err)
		}
		return nil
	}
	// Refused: say why, for the logs; the outcome is decided already.
	if term != 0 {
		lease, err := s.Lease(ctx)
		if err == nil && lease.Term != term {
			return fmt.Errorf("%w: advancing %s with term %d, lease is at term %d (held by %q)", ErrLeaseLost, unit, term, lease.Term, lease.Holder)
		}
	}
	cur, _ := s.Cursor(ctx, unit)
	return fmt.Errorf("%w: %s cursor is %s, expected %s", ErrCursorMoved, unit, timefmt.Format(cur), timefmt.Format(from))
}

// AcquireLease implements CursorStore.
func (s *SQLStore) AcquireLease(ctx context.Context, holder string, now time.Time, ttl time.Duration) (Lease, error) {
	if err := sqldb.CheckTime(now.Add(ttl)); err != nil {
		return Lease{}, fmt.Errorf("tick: acquire lease for %q for %v: %w", holder, ttl, err)
	}
	row, err := s.d.acquireLease(ctx, holder, sqldb.EncodeTime(now), sqldb.EncodeTime(now.Add(ttl)))
	if err != nil {
		return Lease{}, fmt.Errorf("tick: acquire lease for %q: %w", holder, err)
	}
	return row.lease(), nil
}

// ReleaseLease implements CursorStore. The row keeps its term, so the
// next holder's term is one more, and an empty holder, so that no replica
// renews it as its own.
func (s *SQLStore) ReleaseLease(ctx context.Context, holder string, term int64) error {
	if err := s.d.releaseLease(ctx, holder, term); err != nil {
		return fmt.Errorf("tick: release lease of %q at term %d: %w", holder, term, err)
	}
	return nil
}

// Cursors returns every unit's cursor, for status displays.
func (s *SQLStore) Cursors(ctx context.Context) (map[Unit]time.Time, error) {
	rows, err := s.d.cursors(ctx)
	if err != nil {
		return nil, fmt.Errorf("tick: list cursors: %w", err)
	}
	out := make(map[Unit]time.Time, len(rows))
	for unit, ns := range rows {
		out[unit] = sqldb.DecodeTime(ns)
	}
	return out, nil
}

// Lease returns the lease as it stands; the zero Lease when none was taken.
func (s *SQLStore) Lease(ctx context.Context) (Lease, error) {
	row, err := s.d.lease(ctx)
	if err != nil {
		return Lease{}, fmt.Errorf("tick: read lease: %w", err)
	}
	return row.lease(), nil
}

func (r leaseRow) lease() Lease {
	if r == (leaseRow{}) {
		return Lease{}
	}
	return Lease{Holder: r.Holder, Term: r.Term, Expires: sqldb.DecodeTime(r.Expires)}
}
