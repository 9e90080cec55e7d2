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

// Inspection: read-only functions for status pages and dashboards. Unlike
// [NewSQLStore] they never migrate, so they take no write lock and create
// nothing; a database the ticker never ran on reads as holding no cursors
// and no lease. They read through a *sqlx.DB, or a *sqlx.Tx for a
// consistent snapshot of several reads.

// HasState reports whether the database q reads holds a ticker's state:
// whether [NewSQLStore] ever created its tables there, whatever they hold
// now. A status command asks it first, to tell a database the ticker
// never ran on from one whose cursors are all still to come.
func HasState(ctx context.Context, q sqlx.ExtContext) (bool, error) {
	ok, err := sqldb.HasTableWithPrefix(ctx, q, "tick_")
	return ok, wrapRead("look for the ticker's tables", err)
}

// ReadCursors returns the cursor of every unit the ticker stored: what
// [SQLStore.Cursors] returns, without migrating.
func ReadCursors(ctx context.Context, q sqlx.ExtContext) (map[Unit]time.Time, error) {
	out := map[Unit]time.Time{}
	tables, err := sqldb.Tables(ctx, q)
	if err != nil || !tables["tick_cursors"] {
		return out, wrapRead("read cursors", err)
	}
	var rows []struct {
		Unit     string `db:"unit"`
		Boundary int64  `db:"boundary"`
	}
	if err := sqlx.SelectContext(ctx, q, &rows, `SELECT unit, boundary FROM tick_cursors`); err != nil {
		return nil, wrapRead("read cursors", err)
	}
	for _, r := range rows {
		out[Unit(r.Unit)] = sqldb.DecodeTime(r.Boundary)
	}
	return out, nil
}

// ReadLease returns the emitters' lease (holder, fencing term, end), the
// zero Lease when none was ever taken: what [SQLStore.Lease] returns,
// without migrating.
func ReadLease(ctx context.Context, q sqlx.ExtContext) (Lease, error) {
	tables, err := sqldb.Tables(ctx, q)
	if err != nil || !tables["tick_lease"] {
		return Lease{}, wrapRead("read the lease", err)
	}
	var row struct {
		Holder  string `db:"holder"`
		Term    int64  `db:"term"`
		Expires int64  `db:"expires_at"`
	}
	err = sqlx.GetContext(ctx, q, &row, q.Rebind(`SELECT holder, term, expires_at FROM tick_lease WHERE name = ?`), leaseName)
	if errors.Is(err, sql.ErrNoRows) {
		return Lease{}, nil
	}
	if err != nil {
		return Lease{}, wrapRead("read the lease", err)
	}
	return Lease{Holder: row.Holder, Term: row.Term, Expires: sqldb.DecodeTime(row.Expires)}, nil
}

func wrapRead(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("tick: %s: %w", what, err)
}
