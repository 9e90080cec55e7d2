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

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/tick"
	"github.com/passage-of-time/passage/todolist"
)

// What "status" and /metrics show is read by the packages' inspection
// functions (tick.ReadCursors, todolist.ReadStats, dashboard.ReadStatus),
// which never migrate: tick.NewSQLStore and todolist.AllStats migrate the
// schema first, which takes the write lock (SQLite waits behind any
// writer for its busy timeout) and creates tables in a database that has
// none. This file opens databases for them read-only.

// readOnlyBusyTimeout bounds how long a read waits for a lock. In WAL mode
// readers never wait for writers; the timeout only matters for a database
// in another journal mode that is committing right then.
const readOnlyBusyTimeout = 500 * time.Millisecond

// openRead opens dsn for reading only and creates nothing: a SQLite
// path that does not exist is an error, not a new file, and the connection
// is opened with mode=ro and without immediate transactions (immutable when
// no process has the file open, see quiescentWAL); a PostgreSQL session is
// read-only (default_transaction_read_only). That suits a command that
// reads once and ends (database.readOnly).
//
// live is for a process that keeps reading ("ticker serve",
// database.liveReadOnly): it sees every write committed after it opened.
// A SQLite file is never opened immutable, which would read the file as it
// was at the open and miss whatever writers commit to the -wal file next.
// It is opened read-write with PRAGMA query_only, so that nothing is
// written through it and the last connection to close, if it is this one,
// checkpoints (nothing) and removes the -wal and -shm files its reads
// needed. A file this process may not write SQLite opens read-only of
// itself (SQLITE_OPEN_READWRITE falls back to reading), which leaves those
// files behind. Whether the file is writable is not asked of the file:
// opening it from Go and closing it would release the locks this
// process's SQLite connections hold on it (internal/sqldb/sqlite.go).
//
// The pool holds at most maxConns connections, as sqldb.Open's does
// (0: a PostgreSQL DSN's pool_max_conns, else the dialect's default).
func openRead(ctx context.Context, dsn string, maxConns int, live bool) (*sqldb.DB, error) {
	dsn = strings.TrimSpace(dsn)
	var (
		driver   = "sqlite3"
		dialect  = sqldb.SQLite
		open     string
		pgConfig *pgx.ConnConfig
	)
	switch {
	case dsn == "":
		return nil, usagef("--db %q: empty", dsn)
	case sqldb.IsPostgresDSN(dsn):
		cfg, err := sqldb.ParsePostgres(dsn)
		if err != nil {
			return nil, usagef("--db: %s", strings.TrimPrefix(err.Error(), sqldb.ErrBadDSN.Error()+": "))
		}
		fromDSN, err := sqldb.PoolMaxConns(cfg)
		if err != nil {
			return nil, usagef("--db: %s", strings.TrimPrefix(err.Error(), sqldb.ErrBadDSN.Error()+": "))
		}
		if maxConns == 0 {
			maxConns = fromDSN
		}
		cfg.RuntimeParams["default_transaction_read_only"] = "on"
		driver, dialect, pgConfig = "pgx", sqldb.Postgres, cfg
	case strings.Contains(dsn, "://"):
		return nil, usagef("--db %q: unsupported scheme (use a SQLite file path, a postgres:// URL or a key=value DSN)", redact(dsn))
	case sqldb.CheckSQLitePath(dsn) != nil:
		return nil, usagef("--db: %v", sqldb.CheckSQLitePath(dsn))
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
			return nil, usagef("--db %q: %v", redact(dsn), err)
		}
		values.Set("mode", "ro")
		values.Set("_busy_timeout", fmt.Sprint(readOnlyBusyTimeout.Milliseconds()))
		values.Del("_txlock")
		switch {
		case live:
			values.Del("immutable")
			values.Set("mode", "rw")
			values.Set("_query_only", "1")
		case quiescentWAL(path):
			values.Set("immutable", "1")
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, fmt.Errorf("--db: %w", err)
		}
		open = "file:" + (&url.URL{Path: abs}).EscapedPath() + "?" + values.Encode()
	}
	var db *sqlx.DB
	if pgConfig != nil {
		db = sqlx.NewDb(stdlib.OpenDB(*pgConfig), driver)
	} else {
		// passage's SQLite driver, whose lower() folds the letters
		// PostgreSQL's does (sqldb's fold.go), under sqlx's name for it.
		sqlDB, err := sql.Open(sqldb.SQLiteDriverName, open)
		if err != nil {
			return nil, fmt.Errorf("--db: %w", err)
		}
		db = sqlx.NewDb(sqlDB, driver)
	}
	sqldb.Bound(db.DB, dialect, maxConns)
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("--db: %w", err)
	}
	return &sqldb.DB{DB: db, Dialect: dialect}, nil
}

// quiescentWAL reports whether path is a WAL-mode SQLite database that no
// process has open: there is no -wal file (the last connection to close
// checkpoints and removes it) and its header says WAL. Reading one, even
// with mode=ro, would create -wal and -shm files and leave them behind,
// since a read-only connection cannot remove them; opened immutable,
// SQLite reads the file alone, creating nothing. A writer that opens the
// database meanwhile creates the -wal file and writes there, not into the
// file read here, until a checkpoint; a database in use already has its
// -wal file and is read the ordinary way.
//
// The -wal file is looked for first, with a stat, and the header read
// only when there is none: then no SQLite connection in WAL mode has the
// file open, this process's included, so closing the descriptor the
// header was read through releases no lock SQLite holds (closing any
// descriptor of a file releases all of the process's POSIX locks on it).
func quiescentWAL(path string) bool {
	if _, err := os.Stat(path + "-wal"); !errors.Is(err, os.ErrNotExist) {
		return false
	}
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
	return string(header[:16]) == "SQLite format 3\x00" && header[18] == 2 && header[19] == 2
}

// errNoState is returned for a database that holds no passage state.
var errNoState = errors.New("holds no ticker state (no tick_ or todolist_ tables): is it the database \"ticker run\" uses?")

// hasState reports whether q's database holds a ticker's state or to-do
// lists, asking each package without migrating.
func hasState(ctx context.Context, q sqlx.ExtContext) (bool, error) {
	for _, has := range []func(context.Context, sqlx.ExtContext) (bool, error){tick.HasState, todolist.HasState} {
		if ok, err := has(ctx, q); err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

// redact is dsn without a password, for error messages (sqldb.Redact).
func redact(dsn string) string { return sqldb.Redact(dsn) }

// snapshot is a database opened read-only (openRead) and one
// read-only transaction over it: a consistent view, deferred on SQLite (a
// reader, which never waits for WAL writers) and READ ONLY on PostgreSQL.
type snapshot struct {
	db *sqldb.DB
	tx *sqlx.Tx
}

// openSnapshot opens dsn as a snapshot, its pool bounded at maxConns;
// close ends it.
func openSnapshot(ctx context.Context, dsn string, maxConns int) (*snapshot, error) {
	db, err := openRead(ctx, dsn, maxConns, false)
	if err != nil {
		return nil, err
	}
	tx, err := db.BeginTxx(ctx, &sql.TxOptions{ReadOnly: db.IsPostgres()})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("read %s: %w", redact(dsn), err)
	}
	return &snapshot{db: db, tx: tx}, nil
}

func (s *snapshot) close() {
	_ = s.tx.Rollback()
	_ = s.db.Close()
}
