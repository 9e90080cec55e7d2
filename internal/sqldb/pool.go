package sqldb

import (
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Pool bounds: how many connections [Open] keeps to a database at most.
//
// PostgreSQL refuses clients past its max_connections (100 by default)
// with "too many clients already", and then refuses every other client of
// the server too: a pool without a bound, asked for 200 pages at once,
// took the whole server. Ten connections per pool keep a few replicas, each
// with a pool or two, well under that; a process that needs more sets
// [WithMaxConns] (the binary's --db-max-conns) or pool_max_conns in the
// DSN, as pgxpool reads it.
//
// SQLite has one writer at a time: more connections add readers only,
// each with a page cache of its own, and database/sql closing the
// connections it cannot keep idle meant opening new ones all day. A pool
// of eight, all kept, serves any number of goroutines taking turns.
const (
	DefaultPostgresMaxConns = 10
	DefaultSQLiteMaxConns   = 8
	// MaxConnsLimit bounds [WithMaxConns] and pool_max_conns.
	MaxConnsLimit = 1000
)

// postgresIdleTime closes a PostgreSQL connection idle for this long, so a
// quiet process gives its server slots back.
const postgresIdleTime = 5 * time.Minute

// ErrBadOption is returned by [Open] for an option it cannot take.
var ErrBadOption = errors.New("sqldb: invalid option")

// ErrSQLiteNeedsCGO is returned for a SQLite database by a binary built
// without cgo (CGO_ENABLED=0), whose SQLite driver cannot open anything.
var ErrSQLiteNeedsCGO = errors.New("sqldb: SQLite needs cgo, and this binary was built with CGO_ENABLED=0: build it with a C compiler and CGO_ENABLED=1, or use PostgreSQL (a postgres:// DSN)")

// Option configures [Open].
type Option func(*options) error

type options struct {
	maxConns int // 0: the DSN's pool_max_conns, else the dialect's default
}

// WithMaxConns bounds the pool at n connections (1 to [MaxConnsLimit]),
// in place of pool_max_conns in a PostgreSQL DSN and of the defaults
// ([DefaultPostgresMaxConns], [DefaultSQLiteMaxConns]). A caller that
// waits for a connection waits until one is put back or its context ends.
func WithMaxConns(n int) Option {
	return func(o *options) error {
		if n < 1 || n > MaxConnsLimit {
			return fmt.Errorf("%w: WithMaxConns(%d): must be between 1 and %d", ErrBadOption, n, MaxConnsLimit)
		}
		o.maxConns = n
		return nil
	}
}

// PoolMaxConns takes pool_max_conns out of a parsed PostgreSQL
// configuration and returns it, 0 when it is not there. pgx's own parser
// keeps it as a run-time parameter, which the server would refuse
// ("unrecognized configuration parameter"); the other pool_ parameters of
// pgxpool are refused here for the same reason, naming the one that is
// read.
func PoolMaxConns(cfg *pgx.ConnConfig) (int, error) {
	n := 0
	for k, v := range cfg.RuntimeParams {
		if !strings.HasPrefix(k, "pool_") {
			continue
		}
		if k != "pool_max_conns" {
			return 0, fmt.Errorf("%w: %s: not a parameter passage reads (pool_max_conns is)", ErrBadDSN, k)
		}
		m, err := strconv.Atoi(v)
		if err != nil || m < 1 || m > MaxConnsLimit {
			return 0, fmt.Errorf("%w: pool_max_conns=%q: must be a whole number between 1 and %d", ErrBadDSN, clip(v), MaxConnsLimit)
		}
		n = m
		delete(cfg.RuntimeParams, k)
	}
	return n, nil
}

// Bound sets db's pool for its dialect: at most maxConns connections, or
// the dialect's default when maxConns is 0, every one of them kept when
// idle (a PostgreSQL one for up to five minutes).
func Bound(db *sql.DB, dialect Dialect, maxConns int) {
	if maxConns == 0 {
		maxConns = DefaultSQLiteMaxConns
		if dialect == Postgres {
			maxConns = DefaultPostgresMaxConns
		}
	}
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	if dialect == Postgres {
		db.SetConnMaxIdleTime(postgresIdleTime)
	}
}

// clip is at most the first 32 bytes of s, for an error message.
func clip(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}
