package sqldb

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/jmoiron/sqlx"
)

// Dialect names the SQL engine behind a [DB].
type Dialect string

// The supported dialects.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// ErrBadDSN is returned by [Open] when the DSN cannot be understood.
var ErrBadDSN = errors.New("sqldb: malformed DSN")

// DB is an open database and the dialect it speaks. It embeds *sqlx.DB, whose
// Rebind turns "?" placeholders into the dialect's own, so queries are written
// once with "?".
type DB struct {
	*sqlx.DB
	Dialect Dialect
}

// IsPostgres reports whether the database is PostgreSQL.
func (db *DB) IsPostgres() bool { return db.Dialect == Postgres }

// DialectOf returns the dialect of anything sqlx can run queries on, by its
// driver name. Packages that accept a caller's transaction use it to pick the
// right SQL.
func DialectOf(q interface{ DriverName() string }) Dialect {
	if q.DriverName() == "pgx" {
		return Postgres
	}
	return SQLite
}

// Open opens the database named by dsn and checks that it answers.
//
// A postgres:// or postgresql:// URL or a libpq key=value DSN
// ([IsPostgresDSN]) opens PostgreSQL, parsed by pgx; anything else is a
// SQLite file path or "file:" URI, except a URL of another scheme
// ("postgres:x", "mysql://…") or a name with a control character, which
// are refused with [ErrBadDSN] rather than created as files. Errors show
// the DSN only through [Redact]. SQLite connections get WAL,
// a 10 s busy timeout, foreign keys, immediate transactions and a page
// cache of up to 64 MiB unless the DSN sets them itself (_cache_size).
// The cache is allocated as pages are read, so a small database costs
// little; SQLite's default of 2 MiB made a minute of 100,000 schedules a
// third slower (schedule's BenchmarkEveryMinute).
//
// The pool is bounded (pool.go): [DefaultPostgresMaxConns] or a
// PostgreSQL DSN's pool_max_conns, [DefaultSQLiteMaxConns], or
// [WithMaxConns]; an ":memory:" database has one connection.
func Open(ctx context.Context, dsn string, opts ...Option) (*DB, error) {
	var o options
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	dsn = strings.TrimSpace(dsn)
	if dsn == "" {
		return nil, fmt.Errorf("%w: empty", ErrBadDSN)
	}
	var (
		db      *sqlx.DB
		dialect Dialect
		err     error
	)
	if IsPostgresDSN(dsn) {
		cfg, err := ParsePostgres(dsn)
		if err != nil {
			return nil, err
		}
		fromDSN, err := PoolMaxConns(cfg)
		if err != nil {
			return nil, err
		}
		if o.maxConns == 0 {
			o.maxConns = fromDSN
		}
		dialect = Postgres
		db = sqlx.NewDb(stdlib.OpenDB(*cfg), "pgx")
		Bound(db.DB, dialect, o.maxConns)
	} else {
		if strings.Contains(dsn, "://") {
			return nil, fmt.Errorf("%w: %q: unsupported scheme (use a SQLite file path, a postgres:// URL or a key=value DSN)", ErrBadDSN, Redact(dsn))
		}
		if err := CheckSQLitePath(dsn); err != nil {
			return nil, err
		}
		dialect = SQLite
		var sqliteDSN string
		sqliteDSN, err = sqliteOptions(dsn)
		if err != nil {
			return nil, err
		}
		busyTimeout, err := busyTimeoutOf(sqliteDSN)
		if err != nil {
			return nil, err
		}
		sqlDB, err := openSQLite(sqliteDSN, isReadOnlyDSN(dsn), busyTimeout)
		if err != nil {
			return nil, err
		}
		// The driver name stays "sqlite3" for sqlx and DialectOf.
		db = sqlx.NewDb(sqlDB, "sqlite3")
		Bound(db.DB, dialect, o.maxConns)
		if isMemory(dsn) {
			// Each connection to ":memory:" is a separate database; one
			// connection keeps every caller on the same one.
			db.SetMaxOpenConns(1)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("sqldb: open %s %q: %w", dialect, Redact(dsn), err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("sqldb: connect to %s %q: %w", dialect, Redact(dsn), err)
	}
	return &DB{DB: db, Dialect: dialect}, nil
}

func isMemory(dsn string) bool {
	return dsn == ":memory:" || strings.Contains(dsn, "mode=memory")
}

// isReadOnlyDSN reports whether a SQLite DSN asks for a read-only
// database (mode=ro), whose connections are meant to be read-only.
func isReadOnlyDSN(dsn string) bool {
	_, query, _ := strings.Cut(dsn, "?")
	values, err := url.ParseQuery(query)
	return err == nil && values.Get("mode") == "ro"
}

// busyTimeoutOf reads the _busy_timeout, in milliseconds, of a DSN
// sqliteOptions made.
func busyTimeoutOf(dsn string) (int, error) {
	_, query, _ := strings.Cut(dsn, "?")
	values, _ := url.ParseQuery(query)
	ms, err := strconv.Atoi(values.Get("_busy_timeout"))
	if err != nil || ms < 0 {
		return 0, fmt.Errorf("%w: _busy_timeout=%q: must be a whole number of milliseconds", ErrBadDSN, clip(values.Get("_busy_timeout")))
	}
	return ms, nil
}

// sqliteOptions adds the connection settings passage relies on to a SQLite
// DSN, keeping any the caller chose.
func sqliteOptions(dsn string) (string, error) {
	path, query, _ := strings.Cut(dsn, "?")
	values, err := url.ParseQuery(query)
	if err != nil {
		return "", fmt.Errorf("%w: %q: %v", ErrBadDSN, Redact(dsn), err)
	}
	defaults := map[string]string{
		"_busy_timeout": "10000",
		"_foreign_keys": "on",
		// Immediate transactions take the write lock at BEGIN, so two
		// writers never deadlock upgrading read locks; the busy timeout
		// then queues them.
		"_txlock": "immediate",
		// Negative: KiB, not pages.
		"_cache_size": "-65536",
		// Prepared statements kept per connection, keyed by their text:
		// preparing a statement costs SQLite a parse and a plan, a quarter
		// of a tick's work in the order example.
		"_stmt_cache_size": "128",
	}
	if !isMemory(dsn) {
		defaults["_journal_mode"] = "WAL"
		defaults["_synchronous"] = "NORMAL"
	}
	for k, v := range defaults {
		if !values.Has(k) {
			values.Set(k, v)
		}
	}
	return path + "?" + values.Encode(), nil
}
