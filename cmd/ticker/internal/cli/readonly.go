package cli

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/tick"
	"github.com/passage-of-time/passage/todolist"
)

// The state readers below are what "status" and /metrics show. They only
// read: tick.NewSQLStore and todolist.AllStats migrate the schema first,
// which takes the write lock (SQLite waits behind any writer for its busy
// timeout) and creates tables in a database that has none. So the SQL
// reading tick's and todolist's tables is repeated here, read-only, and
// every table is checked for before it is queried.

// readOnlyBusyTimeout bounds how long a read waits for a lock. In WAL mode
// readers never wait for writers; the timeout only matters for a database
// in another journal mode that is committing right then.
const readOnlyBusyTimeout = 500 * time.Millisecond

// openReadOnly opens dsn for reading only and creates nothing: a SQLite
// path that does not exist is an error, not a new file, and the connection
// is opened with mode=ro and without immediate transactions; a PostgreSQL
// session is read-only (default_transaction_read_only).
func openReadOnly(ctx context.Context, dsn string) (*sqldb.DB, error) {
	dsn = strings.TrimSpace(dsn)
	var (
		driver  = "sqlite3"
		dialect = sqldb.SQLite
		open    string
	)
	switch {
	case dsn == "":
		return nil, usagef("--db %q: empty", dsn)
	case sqldb.IsPostgresDSN(dsn):
		u, err := url.Parse(dsn)
		if err != nil {
			var uerr *url.Error
			if errors.As(err, &uerr) {
				err = uerr.Err // without the URL, which may hold a password
			}
			return nil, usagef("--db: not a PostgreSQL URL: %v", err)
		}
		q := u.Query()
		q.Set("default_transaction_read_only", "on")
		u.RawQuery = q.Encode()
		driver, dialect, open = "pgx", sqldb.Postgres, u.String()
	case strings.Contains(dsn, "://"):
		return nil, usagef("--db %q: unsupported scheme (use a SQLite file path or postgres://)", redact(dsn))
	case dsn == ":memory:" || strings.Contains(dsn, "mode=memory"):
		return nil, usagef("--db %q: an in-memory database holds no ticker state", dsn)
	default:
		path, query, _ := strings.Cut(strings.TrimPrefix(dsn, "file:"), "?")
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("--db %s: no such database (nothing was created)", path)
		} else if err != nil {
			return nil, fmt.Errorf("--db: %w", err)
		}
		values, err := url.ParseQuery(query)
		if err != nil {
			return nil, usagef("--db %q: %v", dsn, err)
		}
		values.Set("mode", "ro")
		values.Set("_busy_timeout", fmt.Sprint(readOnlyBusyTimeout.Milliseconds()))
		values.Del("_txlock")
		if quiescentWAL(path) {
			values.Set("immutable", "1")
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, fmt.Errorf("--db: %w", err)
		}
		open = "file:" + (&url.URL{Path: abs}).EscapedPath() + "?" + values.Encode()
	}
	db, err := sqlx.Open(driver, open)
	if err != nil {
		return nil, fmt.Errorf("--db: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("--db: %w", err)
	}
	return &sqldb.DB{DB: db, Dialect: dialect}, nil
}

// quiescentWAL reports whether path is a WAL-mode SQLite database that no
// process has open: its header says WAL and there is no -wal file (the last
// connection to close checkpoints and removes it). Reading one, even with
// mode=ro, would create -wal and -shm files and leave them behind, since a
// read-only connection cannot remove them; opened immutable, SQLite reads
// the file alone, creating nothing. A writer that opens the database
// meanwhile creates the -wal file and writes there, not into the file read
// here, until a checkpoint; a database in use already has its -wal file
// and is read the ordinary way.
func quiescentWAL(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	header := make([]byte, 20)
	if _, err := io.ReadFull(f, header); err != nil {
		return false
	}
	// Bytes 18 and 19 are the write and read format versions: 2 is WAL.
	if string(header[:16]) != "SQLite format 3\x00" || header[18] != 2 || header[19] != 2 {
		return false
	}
	_, err = os.Stat(path + "-wal")
	return errors.Is(err, os.ErrNotExist)
}

// queryer is a database handle or a transaction.
type queryer interface {
	sqlx.QueryerContext
	Rebind(string) string
}

// errNoState is returned for a database that holds no passage state.
var errNoState = errors.New("holds no ticker state (no tick_ or todolist_ tables): is it the database \"ticker run\" uses?")

// tablesIn lists the tables q sees: SQLite's, or those on PostgreSQL's
// search path.
func tablesIn(ctx context.Context, q queryer, dialect sqldb.Dialect) (map[string]bool, error) {
	query := `SELECT name FROM sqlite_master WHERE type = 'table'`
	if dialect == sqldb.Postgres {
		query = `SELECT table_name FROM information_schema.tables WHERE table_schema = ANY (current_schemas(false))`
	}
	var names []string
	if err := sqlx.SelectContext(ctx, q, &names, query); err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	tables := make(map[string]bool, len(names))
	for _, n := range names {
		tables[n] = true
	}
	return tables, nil
}

// readCursors is tick.SQLStore.Cursors without the migration; no table, no
// cursors.
func readCursors(ctx context.Context, q queryer, tables map[string]bool) (map[tick.Unit]time.Time, error) {
	out := map[tick.Unit]time.Time{}
	if !tables["tick_cursors"] {
		return out, nil
	}
	var rows []struct {
		Unit     string `db:"unit"`
		Boundary int64  `db:"boundary"`
	}
	if err := sqlx.SelectContext(ctx, q, &rows, `SELECT unit, boundary FROM tick_cursors`); err != nil {
		return nil, fmt.Errorf("read cursors: %w", err)
	}
	for _, r := range rows {
		out[tick.Unit(r.Unit)] = sqldb.DecodeTime(r.Boundary)
	}
	return out, nil
}

// readLease is tick.SQLStore.Lease without the migration.
func readLease(ctx context.Context, q queryer, tables map[string]bool) (tick.Lease, error) {
	if !tables["tick_lease"] {
		return tick.Lease{}, nil
	}
	var row struct {
		Holder  string `db:"holder"`
		Term    int64  `db:"term"`
		Expires int64  `db:"expires_at"`
	}
	err := sqlx.GetContext(ctx, q, &row, q.Rebind(`SELECT holder, term, expires_at FROM tick_lease WHERE name = ?`), "ticker")
	if errors.Is(err, sql.ErrNoRows) {
		return tick.Lease{}, nil
	}
	if err != nil {
		return tick.Lease{}, fmt.Errorf("read lease: %w", err)
	}
	return tick.Lease{Holder: row.Holder, Term: row.Term, Expires: sqldb.DecodeTime(row.Expires)}, nil
}

// listStatsQuery is todolist's statistics query over every list: per list,
// its items aggregated and its totals; each list has at most one row on
// each side of the union, so MAX picks the counted value.
const listStatsQuery = `SELECT list, MAX(pending), MAX(due), MAX(parked), MIN(oldest), MAX(completed), MAX(failures), MAX(parkings)
FROM (
	SELECT list, COUNT(*) - COALESCE(SUM(parked), 0) AS pending,
		COALESCE(SUM(CASE WHEN parked = 0 AND due <= ? THEN 1 ELSE 0 END), 0) AS due,
		COALESCE(SUM(parked), 0) AS parked,
		MIN(CASE WHEN parked = 0 AND due <= ? THEN due END) AS oldest,
		0 AS completed, 0 AS failures, 0 AS parkings
	FROM todolist_items GROUP BY list
	UNION ALL
	SELECT list, 0, 0, 0, NULL, completed, failures, parkings FROM todolist_counters
) AS s GROUP BY list ORDER BY list`

// readListStats is todolist.AllStats without the migration; no tables, no
// lists.
func readListStats(ctx context.Context, q queryer, tables map[string]bool, now time.Time) ([]todolist.ListStats, error) {
	if !tables["todolist_items"] || !tables["todolist_counters"] {
		return nil, nil
	}
	at := sqldb.EncodeTime(now)
	rows, err := q.QueryContext(ctx, q.Rebind(listStatsQuery), at, at)
	if err != nil {
		return nil, fmt.Errorf("read to-do lists: %w", err)
	}
	defer rows.Close()
	var all []todolist.ListStats
	for rows.Next() {
		var ls todolist.ListStats
		var oldest sql.NullInt64
		if err := rows.Scan(&ls.Name, &ls.Pending, &ls.Due, &ls.Parked, &oldest, &ls.Completed, &ls.Failures, &ls.Parkings); err != nil {
			return nil, fmt.Errorf("read to-do lists: %w", err)
		}
		if oldest.Valid {
			ls.OldestDue = sqldb.DecodeTime(oldest.Int64)
		}
		all = append(all, ls)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read to-do lists: %w", err)
	}
	return all, nil
}

// hasState reports whether tables include any of passage's ticker or
// to-do list tables.
func hasState(tables map[string]bool) bool {
	for name := range tables {
		if strings.HasPrefix(name, "tick_") || strings.HasPrefix(name, "todolist_") {
			return true
		}
	}
	return false
}

// redact hides the password of a URL-shaped DSN, for error messages.
func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		return dsn
	}
	return u.Redacted()
}

// snapshot is a database opened read-only (openReadOnly) and one
// read-only transaction over it — a consistent view, deferred on SQLite (a
// reader, which never waits for WAL writers) and READ ONLY on PostgreSQL —
// with the tables the database holds.
type snapshot struct {
	db     *sqldb.DB
	tx     *sqlx.Tx
	tables map[string]bool
}

// openSnapshot opens dsn as a snapshot; close ends it.
func openSnapshot(ctx context.Context, dsn string) (*snapshot, error) {
	db, err := openReadOnly(ctx, dsn)
	if err != nil {
		return nil, err
	}
	tx, err := db.BeginTxx(ctx, &sql.TxOptions{ReadOnly: db.IsPostgres()})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("read %s: %w", redact(dsn), err)
	}
	tables, err := tablesIn(ctx, tx, db.Dialect)
	if err != nil {
		_ = tx.Rollback()
		_ = db.Close()
		return nil, fmt.Errorf("read %s: %w", redact(dsn), err)
	}
	return &snapshot{db: db, tx: tx, tables: tables}, nil
}

func (s *snapshot) close() {
	_ = s.tx.Rollback()
	_ = s.db.Close()
}
