package sqldb

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"
)

// Migration is one step of a package's schema. Statements may differ per
// dialect; when Postgres is empty, SQLite is used for both. A step that
// only PostgreSQL needs leaves SQLite empty: SQLite records the version and
// runs nothing.
type Migration struct {
	Version  int
	SQLite   string
	Postgres string
}

func (m Migration) statement(d Dialect) string {
	if d == Postgres && m.Postgres != "" {
		return m.Postgres
	}
	return m.SQLite
}

const migrationsTable = `CREATE TABLE IF NOT EXISTS passage_migrations (
	component TEXT NOT NULL,
	version   INTEGER NOT NULL,
	PRIMARY KEY (component, version)
)`

// Migrate applies the migrations of component that the database has not
// seen, in version order, each in its own transaction with its bookkeeping
// row. It is safe to call from several processes at once: on PostgreSQL an
// advisory lock serialises them, on SQLite the immediate transaction does.
func Migrate(ctx context.Context, db *sqlx.DB, component string, migrations []Migration) error {
	for _, m := range migrations {
		if err := apply(ctx, db, component, m); err != nil {
			return fmt.Errorf("sqldb: migrate %s to version %d: %w", component, m.Version, err)
		}
	}
	return nil
}

func apply(ctx context.Context, db *sqlx.DB, component string, m Migration) error {
	dialect := DialectOf(db)
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if dialect == Postgres {
		// One lock for all migrations: concurrent CREATE TABLE IF NOT
		// EXISTS can otherwise fail on PostgreSQL's catalog constraints.
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(7265616765)`); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, migrationsTable); err != nil {
		return fmt.Errorf("create migrations table: %w", err)
	}
	var n int
	if err := tx.GetContext(ctx, &n, tx.Rebind(`SELECT COUNT(*) FROM passage_migrations WHERE component = ? AND version = ?`), component, m.Version); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	if stmt := m.statement(dialect); stmt != "" {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO passage_migrations (component, version) VALUES (?, ?)`), component, m.Version); err != nil {
		return err
	}
	return tx.Commit()
}
