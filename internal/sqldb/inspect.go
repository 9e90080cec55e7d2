package sqldb

import (
	"context"
	"fmt"
	"strings"

	"github.com/jmoiron/sqlx"
)

// Queryer is what the packages' read-only inspection functions read
// through: a *sqlx.DB or a *sqlx.Tx (a consistent snapshot of several
// reads).
type Queryer interface {
	sqlx.QueryerContext
	Rebind(string) string
	DriverName() string
}

// Tables lists the tables q sees: SQLite's, or those on PostgreSQL's
// search path. Inspection reads it first so that a database a package has
// not migrated yet reads as empty instead of failing, and nothing is
// created to find out.
func Tables(ctx context.Context, q Queryer) (map[string]bool, error) {
	query := `SELECT name FROM sqlite_master WHERE type = 'table'`
	if DialectOf(q) == Postgres {
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

// HasTableWithPrefix reports whether q sees a table whose name starts with
// prefix: a package's tables are all named <package>_…, so that this
// says whether the package ever migrated the database, creating nothing
// to find out. Each package's HasState asks it with its own prefix.
func HasTableWithPrefix(ctx context.Context, q Queryer, prefix string) (bool, error) {
	tables, err := Tables(ctx, q)
	if err != nil {
		return false, err
	}
	for name := range tables {
		if strings.HasPrefix(name, prefix) {
			return true, nil
		}
	}
	return false, nil
}
