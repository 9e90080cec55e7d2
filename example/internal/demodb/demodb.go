package demodb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// Open opens dsn, or, when dsn is empty, a fresh SQLite file named file
// in a temporary directory. close closes the database and removes that
// directory; call it once the example is done with the database.
func Open(ctx context.Context, dsn, file string) (db *sqldb.DB, close func() error, err error) {
	removeDir := func() error { return nil }
	if dsn == "" {
		dir, err := os.MkdirTemp("", "passage-example")
		if err != nil {
			return nil, nil, fmt.Errorf("create a temporary directory for the database: %w", err)
		}
		removeDir = func() error { return os.RemoveAll(dir) }
		dsn = filepath.Join(dir, file)
	}
	db, err = sqldb.Open(ctx, dsn)
	if err != nil {
		return nil, nil, errors.Join(fmt.Errorf("open the database: %w", err), removeDir())
	}
	return db, func() error { return errors.Join(db.Close(), removeDir()) }, nil
}
