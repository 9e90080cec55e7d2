package tick

import (
	"context"
	"database/sql"
	"errors"

	"github.com/jmoiron/sqlx"
)

// statements are one database's SQL for sqlDriver.
type statements struct {
	cursor, cursors                  string
	createCursor, createCursorFenced string
	moveCursor, moveCursorFenced     string
	takeLease, firstLease, readLease string
	releaseLease                     string
}

// portable returns the statements in the SQL both databases speak (ON
// CONFLICT, INSERT … SELECT), with ? placeholders.
func portable() statements {
	// fence is the condition a cursor write adds when it carries a term.
	const fence = ` AND EXISTS (SELECT 1 FROM tick_lease WHERE name = ? AND term = ?)`
	// WHERE before ON CONFLICT is also what lets SQLite parse
	// INSERT … SELECT … ON CONFLICT unambiguously.
	const create = `INSERT INTO tick_cursors (unit, boundary) SELECT ?, ? WHERE 1 = 1`
	const conflict = ` ON CONFLICT (unit) DO NOTHING`
	const move = `UPDATE tick_cursors SET boundary = ? WHERE unit = ? AND boundary = ?`
	return statements{
		cursor:             `SELECT boundary FROM tick_cursors WHERE unit = ?`,
		cursors:            `SELECT unit, boundary FROM tick_cursors`,
		createCursor:       create + conflict,
		createCursorFenced: create + fence + conflict,
		moveCursor:         move,
		moveCursorFenced:   move + fence,
		// Take it over when expired (a new term) or renew our own (same
		// term).
		takeLease: `UPDATE tick_lease
SET term = CASE WHEN holder = ? THEN term ELSE term + 1 END, holder = ?, expires_at = ?
WHERE name = ? AND (holder = ? OR holder = '' OR expires_at <= ?)`,
		firstLease: `INSERT INTO tick_lease (name, holder, term, expires_at) VALUES (?, ?, 1, ?)
ON CONFLICT (name) DO NOTHING`,
		readLease:    `SELECT holder, term, expires_at FROM tick_lease WHERE name = ?`,
		releaseLease: `UPDATE tick_lease SET holder = '', expires_at = 0 WHERE name = ? AND holder = ? AND term = ?`,
	}
}

// rebind turns the statements' ? placeholders into bindType's.
func (q statements) rebind(bindType int) statements {
	for _, s := range []*string{&q.cursor, &q.cursors, &q.createCursor, &q.createCursorFenced, &q.moveCursor, &q.moveCursorFenced,
		&q.takeLease, &q.firstLease, &q.readLease, &q.releaseLease} {
		*s = sqlx.Rebind(bindType, *s)
	}
	return q
}

// sqlDriver runs a database's statements. The two databases differ only
// in their statements' placeholders, so one executor serves both; a
// database that needs other steps gets a driver type of its own.
type sqlDriver struct {
	db *sqlx.DB
	q  statements
}

func (d *sqlDriver) cursor(ctx context.Context, unit Unit) (int64, bool, error) {
	var ns int64
	err := d.db.GetContext(ctx, &ns, d.q.cursor, string(unit))
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return ns, err == nil, err
}

func (d *sqlDriver) createCursor(ctx context.Context, unit Unit, to, term int64) (bool, error) {
	if term == 0 {
		return d.exec1(ctx, d.q.createCursor, string(unit), to)
	}
	return d.exec1(ctx, d.q.createCursorFenced, string(unit), to, leaseName, term)
}

func (d *sqlDriver) moveCursor(ctx context.Context, unit Unit, from, to, term int64) (bool, error) {
	if term == 0 {
		return d.exec1(ctx, d.q.moveCursor, to, string(unit), from)
	}
	return d.exec1(ctx, d.q.moveCursorFenced, to, string(unit), from, leaseName, term)
}

// exec1 runs a write and reports whether it changed one row.
func (d *sqlDriver) exec1(ctx context.Context, query string, args ...any) (bool, error) {
	res, err := d.db.ExecContext(ctx, query, args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (d *sqlDriver) cursors(ctx context.Context) (map[Unit]int64, error) {
	var rows []struct {
		Unit     string `db:"unit"`
		Boundary int64  `db:"boundary"`
	}
	if err := d.db.SelectContext(ctx, &rows, d.q.cursors); err != nil {
		return nil, err
	}
	out := make(map[Unit]int64, len(rows))
	for _, r := range rows {
		out[Unit(r.Unit)] = r.Boundary
	}
	return out, nil
}

func (d *sqlDriver) acquireLease(ctx context.Context, holder string, now, expires int64) (leaseRow, error) {
	tx, err := d.db.BeginTxx(ctx, nil)
	if err != nil {
		return leaseRow{}, err
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, d.q.takeLease, holder, holder, expires, leaseName, holder, now); err != nil {
		return leaseRow{}, err
	}
	if _, err := tx.ExecContext(ctx, d.q.firstLease, leaseName, holder, expires); err != nil {
		return leaseRow{}, err
	}
	lease, err := d.readLease(ctx, tx)
	if err != nil {
		return leaseRow{}, err
	}
	return lease, tx.Commit()
}

func (d *sqlDriver) releaseLease(ctx context.Context, holder string, term int64) error {
	_, err := d.db.ExecContext(ctx, d.q.releaseLease, leaseName, holder, term)
	return err
}

func (d *sqlDriver) lease(ctx context.Context) (leaseRow, error) {
	return d.readLease(ctx, d.db)
}

func (d *sqlDriver) readLease(ctx context.Context, q sqlx.QueryerContext) (leaseRow, error) {
	var row leaseRow
	err := sqlx.GetContext(ctx, q, &row, d.q.readLease, leaseName)
	if errors.Is(err, sql.ErrNoRows) {
		return leaseRow{}, nil
	}
	return row, err
}
