//go:build cgo

package sqldb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/mattn/go-sqlite3"
)

// openSQLite opens a pool of SQLite connections through a connector of
// our own rather than the registered driver, so that read-only connections
// leave the pool (sqliteConnector).
func openSQLite(dsn string, readOnly bool, busyTimeout int) (*sql.DB, error) {
	return sql.OpenDB(sqliteConnector{dsn: dsn, driver: newSQLiteDriver(), readOnly: readOnly, busyTimeout: busyTimeout}), nil
}

// IsSQLiteUniqueViolation reports whether err is SQLite refusing a row
// whose UNIQUE or PRIMARY KEY value exists already.
func IsSQLiteUniqueViolation(err error) bool {
	var e sqlite3.Error
	return errors.As(err, &e) && (e.ExtendedCode == sqlite3.ErrConstraintUnique || e.ExtendedCode == sqlite3.ErrConstraintPrimaryKey)
}

// sqliteConnector opens SQLite connections that leave the pool once they
// turned out to be read-only.
//
// SQLite opens a database file read-only, without a word, when it cannot
// open it for writing — a file or directory made read-only for a while, a
// disk remounted read-only — and such a connection stays read-only for its
// whole life: every write fails with SQLITE_READONLY ("attempt to write a
// readonly database") even after the file is writable again. database/sql
// keeps it in its pool for ever, so a ticker would never write its cursor
// again. A connection whose statement failed with SQLITE_READONLY (any
// extended code) therefore reports itself invalid (driver.Validator), and
// database/sql closes it when it is put back instead of reusing it; the
// next statement opens a fresh connection, writable once the file is.
//
// The failing statement's error is returned unchanged, so callers see
// SQLite's message; it is not turned into driver.ErrBadConn, which would
// make database/sql retry it on fresh connections and then hide the cause
// behind "driver: bad connection".
//
// A DSN that asks for a read-only database (mode=ro) gets read-only
// connections on purpose: they stay in the pool.
type sqliteConnector struct {
	dsn      string
	driver   *sqlite3.SQLiteDriver
	readOnly bool // mode=ro: read-only is what the caller asked for
	// busyTimeout is the DSN's _busy_timeout in milliseconds, which
	// openedReadOnly sets back after its probe.
	busyTimeout int
}

func (c sqliteConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.driver.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	sc := &sqliteConn{SQLiteConn: conn.(*sqlite3.SQLiteConn)}
	if c.readOnly {
		return conn, nil // nothing to recover from
	}
	// A connection opened for reading only fails at its first write; one
	// that only ever reads would never find out and would stay in the pool,
	// read-only, to fail the first write after the file is writable again.
	// SQLite is asked, not the file: opening and closing the file from Go
	// would release every POSIX lock this process holds on it, those of
	// the other pooled connections included (see openedReadOnly).
	readOnly, err := openedReadOnly(ctx, sc.SQLiteConn, c.busyTimeout)
	if err != nil {
		_ = sc.Close()
		return nil, err
	}
	sc.readOnly.Store(readOnly)
	return sc, nil
}

// openedReadOnly asks SQLite whether it opened the connection's database
// read-only, without waiting for another writer and without touching the
// file from outside SQLite.
//
// The file is never opened from Go while SQLite has it open: POSIX
// advisory locks belong to the process and the file, and closing any
// descriptor of the file releases all of them, those held by every other
// SQLite connection of the process included (SQLite's "How To Corrupt An
// SQLite Database File", 2.2). Without its shared lock, another process's
// last connection to close takes this process for gone, checkpoints and
// deletes the WAL, and the two processes then write two databases.
//
// mattn/go-sqlite3 does not expose sqlite3_db_readonly, and BEGIN
// IMMEDIATE quietly starts a read transaction on a read-only database, so
// the question is a write that is rolled back: with no busy timeout, SQLite
// refuses the write transaction of PRAGMA user_version on a read-only
// database with SQLITE_READONLY before it tries any lock
// (btreeBeginTrans); on a writable one it takes the write lock at once or
// answers SQLITE_BUSY because another connection writes — writable either
// way — and the ROLLBACK leaves the file as it was. busyTimeout, in
// milliseconds, is the connection's own, set back afterwards.
func openedReadOnly(ctx context.Context, conn *sqlite3.SQLiteConn, busyTimeout int) (readOnly bool, err error) {
	exec := func(query string) error {
		_, err := conn.ExecContext(ctx, query, nil)
		return err
	}
	if err := exec(`PRAGMA busy_timeout = 0`); err != nil {
		return false, fmt.Errorf("sqldb: ask SQLite whether it opened the database writable: %w", err)
	}
	if err := exec(`BEGIN DEFERRED`); err != nil {
		return false, fmt.Errorf("sqldb: ask SQLite whether it opened the database writable: %w", err)
	}
	switch err := exec(`PRAGMA main.user_version = 0`); {
	case err == nil:
	case IsReadOnlyError(err):
		readOnly = true
	case isBusy(err):
		// Another connection holds the write lock: this one could take it.
	default:
		if !conn.AutoCommit() {
			_ = exec(`ROLLBACK`)
		}
		return false, fmt.Errorf("sqldb: ask SQLite whether it opened the database writable: %w", err)
	}
	// SQLite may have ended the transaction itself when the write failed.
	if !conn.AutoCommit() {
		if err := exec(`ROLLBACK`); err != nil {
			return false, fmt.Errorf("sqldb: ask SQLite whether it opened the database writable: %w", err)
		}
	}
	if err := exec(fmt.Sprintf(`PRAGMA busy_timeout = %d`, busyTimeout)); err != nil {
		return false, fmt.Errorf("sqldb: set the busy timeout back: %w", err)
	}
	return readOnly, nil
}

// isBusy reports whether err is SQLite's SQLITE_BUSY or SQLITE_LOCKED.
func isBusy(err error) bool {
	var e sqlite3.Error
	return errors.As(err, &e) && (e.Code == sqlite3.ErrBusy || e.Code == sqlite3.ErrLocked)
}

func (c sqliteConnector) Driver() driver.Driver { return c.driver }

// sqliteConn is a mattn/go-sqlite3 connection that remembers whether it
// failed with SQLITE_READONLY. Its other methods, and so the optional
// interfaces database/sql looks for, are the embedded connection's.
type sqliteConn struct {
	*sqlite3.SQLiteConn
	readOnly atomic.Bool
}

var (
	_ driver.Validator          = (*sqliteConn)(nil)
	_ driver.ExecerContext      = (*sqliteConn)(nil)
	_ driver.QueryerContext     = (*sqliteConn)(nil)
	_ driver.ConnPrepareContext = (*sqliteConn)(nil)
	_ driver.ConnBeginTx        = (*sqliteConn)(nil)
)

// IsReadOnlyError reports whether err is SQLite's SQLITE_READONLY, with
// any extended code: the connection or the file cannot be written.
func IsReadOnlyError(err error) bool {
	var e sqlite3.Error
	return errors.As(err, &e) && e.Code == sqlite3.ErrReadonly
}

// check marks the connection read-only when err says it is.
func (c *sqliteConn) check(err error) error {
	if err != nil && IsReadOnlyError(err) {
		c.readOnly.Store(true)
	}
	return err
}

// IsValid implements driver.Validator: database/sql closes a connection
// that failed with SQLITE_READONLY instead of putting it back in the pool.
func (c *sqliteConn) IsValid() bool { return !c.readOnly.Load() }

func (c *sqliteConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	res, err := c.SQLiteConn.ExecContext(ctx, query, args)
	return res, c.check(err)
}

func (c *sqliteConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := c.SQLiteConn.QueryContext(ctx, query, args)
	return rows, c.check(err)
}

func (c *sqliteConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := c.SQLiteConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, c.check(err)
	}
	return &sqliteStmt{SQLiteStmt: st.(*sqlite3.SQLiteStmt), conn: c}, nil
}

func (c *sqliteConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.SQLiteConn.BeginTx(ctx, opts)
	if err != nil {
		return nil, c.check(err)
	}
	return sqliteTx{Tx: tx, conn: c}, nil
}

// sqliteStmt is a prepared statement of a sqliteConn.
type sqliteStmt struct {
	*sqlite3.SQLiteStmt
	conn *sqliteConn
}

func (s *sqliteStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	res, err := s.SQLiteStmt.ExecContext(ctx, args)
	return res, s.conn.check(err)
}

func (s *sqliteStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := s.SQLiteStmt.QueryContext(ctx, args)
	return rows, s.conn.check(err)
}

// sqliteTx is a transaction of a sqliteConn; a commit can fail read-only
// too (SQLITE_READONLY_DBMOVED when the file was replaced).
type sqliteTx struct {
	driver.Tx
	conn *sqliteConn
}

func (t sqliteTx) Commit() error   { return t.conn.check(t.Tx.Commit()) }
func (t sqliteTx) Rollback() error { return t.conn.check(t.Tx.Rollback()) }
