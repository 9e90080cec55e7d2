//go:build !cgo

package sqldb

import (
	"database/sql"
	"database/sql/driver"
)

// Built without cgo (CGO_ENABLED=0: no C compiler, golang:alpine,
// Windows without one), mattn/go-sqlite3 is a stub that fails every open
// with its own words. PostgreSQL needs no cgo and works; a SQLite DSN is
// refused at once with ErrSQLiteNeedsCGO, which says what to do.

func openSQLite(string, bool, int) (*sql.DB, error) { return nil, ErrSQLiteNeedsCGO }

// IsReadOnlyError is false: without cgo no SQLite connection exists.
func IsReadOnlyError(error) bool { return false }

// IsSQLiteUniqueViolation is false: without cgo no SQLite connection
// exists.
func IsSQLiteUniqueViolation(error) bool { return false }

func init() {
	sql.Register(SQLiteDriverName, noSQLite{})
}

// noSQLite is SQLiteDriverName without cgo: every open fails with
// ErrSQLiteNeedsCGO.
type noSQLite struct{}

func (noSQLite) Open(string) (driver.Conn, error) { return nil, ErrSQLiteNeedsCGO }
