package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// defaultDB is the --db of every command that works on the ticker's
// database when neither --db nor $PASSAGE_DB (dbEnv) names another.
const defaultDB = "passage.db"

// dbEnv names the environment variable that replaces defaultDB as the
// default of --db: a PostgreSQL DSN holding a password is then kept out
// of the command line, which ps shows to every user of the machine.
const dbEnv = "PASSAGE_DB"

// dbFlags are --db and --db-max-conns as given; database validates them.
type dbFlags struct {
	dsn      string
	maxConns int
	// fromEnv: $PASSAGE_DB replaces the default (not the demo's --db,
	// which must name an empty database).
	fromEnv bool
	getenv  func(string) string
	cmd     *cobra.Command
}

// addDB declares --db, defaultDB unless $PASSAGE_DB names another, and
// --db-max-conns; usage says what the database is to the command.
func addDB(c *cobra.Command, env Env, usage string) *dbFlags {
	return declareDB(c, env, defaultDB, usage)
}

// addDemoDB declares the demo's --db: none by default (the demo makes a
// database of its own), and $PASSAGE_DB is not read.
func addDemoDB(c *cobra.Command, env Env, usage string) *dbFlags {
	return declareDB(c, env, "", usage)
}

func declareDB(c *cobra.Command, env Env, def, usage string) *dbFlags {
	d := &dbFlags{fromEnv: def == defaultDB, getenv: env.getenv, cmd: c}
	c.Flags().StringVar(&d.dsn, "db", def, usage)
	c.Flags().IntVar(&d.maxConns, "db-max-conns", 0, fmt.Sprintf(
		"the most connections this command keeps open to --db, 1 to %d (default: a PostgreSQL DSN's pool_max_conns, else %d on PostgreSQL and %d on SQLite)",
		sqldb.MaxConnsLimit, sqldb.DefaultPostgresMaxConns, sqldb.DefaultSQLiteMaxConns))
	return d
}

// database is a --db validated: the DSN to open, and the bound of the
// pool it is opened with (0: sqldb's default for the DSN).
type database struct {
	dsn      string
	maxConns int
}

// database is the flags' database: the DSN given, else $PASSAGE_DB, else
// the default, with its pool's bound checked.
func (d *dbFlags) database() (database, error) {
	dsn := d.dsn
	if d.fromEnv && !d.cmd.Flags().Changed("db") {
		if v := strings.TrimSpace(d.getenv(dbEnv)); v != "" {
			dsn = v
		}
	}
	if d.maxConns < 0 || d.maxConns > sqldb.MaxConnsLimit {
		return database{}, usagef("--db-max-conns %d: must be between 1 and %d (or 0, the default)", d.maxConns, sqldb.MaxConnsLimit)
	}
	return database{dsn: dsn, maxConns: d.maxConns}, nil
}

// String is the DSN without its password, for messages (sqldb.Redact).
func (db database) String() string { return redact(db.dsn) }

// open opens the database for writing, creating its file if need be and
// migrating nothing (each package migrates its own tables).
func (db database) open(ctx context.Context) (*sqldb.DB, error) {
	var opts []sqldb.Option
	if db.maxConns > 0 {
		opts = append(opts, sqldb.WithMaxConns(db.maxConns))
	}
	d, err := sqldb.Open(ctx, db.dsn, opts...)
	if errors.Is(err, sqldb.ErrBadDSN) {
		return nil, usagef("--db: %v", err)
	}
	if err != nil {
		return nil, fmt.Errorf("--db: %w", err)
	}
	return d, nil
}

// sqliteFile is the path of the file a SQLite DSN names (without a
// file: prefix or a query), and false for a PostgreSQL DSN or an
// in-memory database.
func (db database) sqliteFile() (string, bool) {
	dsn := strings.TrimSpace(db.dsn)
	if dsn == "" || sqldb.IsPostgresDSN(dsn) || strings.Contains(dsn, "://") ||
		dsn == ":memory:" || strings.Contains(dsn, "mode=memory") {
		return "", false
	}
	path, _, _ := strings.Cut(strings.TrimPrefix(dsn, "file:"), "?")
	return path, true
}

// isNewFile reports whether opening db for writing creates its file: a
// SQLite path with nothing there yet.
func (db database) isNewFile() bool {
	path, ok := db.sqliteFile()
	if !ok {
		return false
	}
	_, err := os.Stat(path)
	return errors.Is(err, os.ErrNotExist)
}

// readOnly opens the database for a command that reads once and ends
// (openReadOnly): nothing is created, migrated or locked.
func (db database) readOnly(ctx context.Context) (*sqldb.DB, error) {
	return openRead(ctx, db.dsn, db.maxConns, false)
}

// liveReadOnly opens the database for a process that keeps reading
// (openLiveReadOnly).
func (db database) liveReadOnly(ctx context.Context) (*sqldb.DB, error) {
	return openRead(ctx, db.dsn, db.maxConns, true)
}

// snapshot opens the database read-only in one read-only transaction
// (openSnapshot).
func (db database) snapshot(ctx context.Context) (*snapshot, error) {
	return openSnapshot(ctx, db.dsn, db.maxConns)
}
