package tick

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// SQLStore is a CursorStore in SQLite or PostgreSQL, shared by every replica
// that opens the same database. It keeps one row per unit (tick_cursors) and
// one lease row (tick_lease); instants are stored as sqldb.EncodeTime values.
type SQLStore struct {
	db *sqlx.DB
}

var _ CursorStore = (*SQLStore)(nil)

// leaseName keys the single lease row; the column leaves room for several
// independent ticker groups in one database later.
const leaseName = "ticker"

var migrations = []sqldb.Migration{{
	Version: 1,
	SQLite: `CREATE TABLE tick_cursors (
	unit     TEXT PRIMARY KEY,
	boundary BIGINT NOT NULL
);
CREATE TABLE tick_lease (
	name       TEXT PRIMARY KEY,
	holder     TEXT NOT NULL,
	term       BIGINT NOT NULL,
	expires_at BIGINT NOT NULL
);`,
}}

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
	if err := sqldb.Migrate(ctx, db, "tick", migrations); err != nil {
		return nil, fmt.Errorf("tick: create cursor tables: %w", err)
	}
	return &SQLStore{db: db}, nil
}

// Cursor implements CursorStore.
func (s *SQLStore) Cursor(ctx context.Context, unit Unit) (time.Time, error) {
	var ns int64
	err := s.db.GetContext(ctx, &ns, s.db.Rebind(`SELECT boundary FROM tick_cursors WHERE unit = ?`), string(unit))
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("tick: load %s cursor: %w", unit, err)
	}
	return sqldb.DecodeTime(ns), nil
}

// fence is the condition a cursor write adds when it carries a term.
const fence = ` AND EXISTS (SELECT 1 FROM tick_lease WHERE name = ? AND term = ?)`

// Advance implements CursorStore. The write and both checks are one
// statement, so a replica that lost the lease between its check and its
// write cannot slip through.
func (s *SQLStore) Advance(ctx context.Context, unit Unit, from, to time.Time, term int64) error {
	if err := sqldb.CheckTime(to); err != nil {
		return fmt.Errorf("tick: advance %s cursor: %w", unit, err)
	}
	var (
		query string
		args  []any
	)
	if from.IsZero() {
		// WHERE before ON CONFLICT is also what lets SQLite parse
		// INSERT … SELECT … ON CONFLICT unambiguously.
		query = `INSERT INTO tick_cursors (unit, boundary) SELECT ?, ? WHERE 1 = 1`
		args = []any{string(unit), sqldb.EncodeTime(to)}
		if term != 0 {
			query += fence
			args = append(args, leaseName, term)
		}
		query += ` ON CONFLICT (unit) DO NOTHING`
	} else {
		query = `UPDATE tick_cursors SET boundary = ? WHERE unit = ? AND boundary = ?`
		args = []any{sqldb.EncodeTime(to), string(unit), sqldb.EncodeTime(from)}
		if term != 0 {
			query += fence
			args = append(args, leaseName, term)
		}
	}
	res, err := s.db.ExecContext(ctx, s.db.Rebind(query), args...)
	if err != nil {
		return fmt.Errorf("tick: advance %s cursor to %s: %w", unit, FormatTime(to), err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	// Refused: say why, for the logs; the outcome is decided already.
	if term != 0 {
		lease, err := s.Lease(ctx)
		if err == nil && lease.Term != term {
			return fmt.Errorf("%w: advancing %s with term %d, lease is at term %d (held by %q)", ErrLeaseLost, unit, term, lease.Term, lease.Holder)
		}
	}
	cur, _ := s.Cursor(ctx, unit)
	return fmt.Errorf("%w: %s cursor is %s, expected %s", ErrCursorMoved, unit, FormatTime(cur), FormatTime(from))
}

// AcquireLease implements CursorStore.
func (s *SQLStore) AcquireLease(ctx context.Context, holder string, now time.Time, ttl time.Duration) (Lease, error) {
	if err := sqldb.CheckTime(now.Add(ttl)); err != nil {
		return Lease{}, fmt.Errorf("tick: acquire lease for %q for %v: %w", holder, ttl, err)
	}
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return Lease{}, fmt.Errorf("tick: acquire lease for %q: %w", holder, err)
	}
	defer func() { _ = tx.Rollback() }()
	expires, nowNS := sqldb.EncodeTime(now.Add(ttl)), sqldb.EncodeTime(now)
	// Take it over when expired (a new term) or renew our own (same term).
	if _, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE tick_lease
SET term = CASE WHEN holder = ? THEN term ELSE term + 1 END, holder = ?, expires_at = ?
WHERE name = ? AND (holder = ? OR holder = '' OR expires_at <= ?)`),
		holder, holder, expires, leaseName, holder, nowNS); err != nil {
		return Lease{}, fmt.Errorf("tick: acquire lease for %q: %w", holder, err)
	}
	if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO tick_lease (name, holder, term, expires_at) VALUES (?, ?, 1, ?)
ON CONFLICT (name) DO NOTHING`), leaseName, holder, expires); err != nil {
		return Lease{}, fmt.Errorf("tick: acquire lease for %q: %w", holder, err)
	}
	lease, err := readLease(ctx, tx)
	if err != nil {
		return Lease{}, fmt.Errorf("tick: acquire lease for %q: %w", holder, err)
	}
	if err := tx.Commit(); err != nil {
		return Lease{}, fmt.Errorf("tick: acquire lease for %q: %w", holder, err)
	}
	return lease, nil
}

// ReleaseLease implements CursorStore. The row keeps its term, so the
// next holder's term is one more, and an empty holder, so that no replica
// renews it as its own.
func (s *SQLStore) ReleaseLease(ctx context.Context, holder string, term int64) error {
	_, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE tick_lease SET holder = '', expires_at = 0
WHERE name = ? AND holder = ? AND term = ?`), leaseName, holder, term)
	if err != nil {
		return fmt.Errorf("tick: release lease of %q at term %d: %w", holder, term, err)
	}
	return nil
}

// Cursors returns every unit's cursor, for status displays.
func (s *SQLStore) Cursors(ctx context.Context) (map[Unit]time.Time, error) {
	var rows []struct {
		Unit     string `db:"unit"`
		Boundary int64  `db:"boundary"`
	}
	if err := s.db.SelectContext(ctx, &rows, `SELECT unit, boundary FROM tick_cursors`); err != nil {
		return nil, fmt.Errorf("tick: list cursors: %w", err)
	}
	out := make(map[Unit]time.Time, len(rows))
	for _, r := range rows {
		out[Unit(r.Unit)] = sqldb.DecodeTime(r.Boundary)
	}
	return out, nil
}

// Lease returns the lease as it stands; the zero Lease when none was taken.
func (s *SQLStore) Lease(ctx context.Context) (Lease, error) {
	lease, err := readLease(ctx, s.db)
	if err != nil {
		return Lease{}, fmt.Errorf("tick: read lease: %w", err)
	}
	return lease, nil
}

func readLease(ctx context.Context, q sqlx.ExtContext) (Lease, error) {
	var row struct {
		Holder  string `db:"holder"`
		Term    int64  `db:"term"`
		Expires int64  `db:"expires_at"`
	}
	err := sqlx.GetContext(ctx, q, &row, q.Rebind(`SELECT holder, term, expires_at FROM tick_lease WHERE name = ?`), leaseName)
	if errors.Is(err, sql.ErrNoRows) {
		return Lease{}, nil
	}
	if err != nil {
		return Lease{}, err
	}
	return Lease{Holder: row.Holder, Term: row.Term, Expires: sqldb.DecodeTime(row.Expires)}, nil
}
