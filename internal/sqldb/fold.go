package sqldb

import (
	"database/sql"
	"strings"

	"github.com/mattn/go-sqlite3"
)

// Case-insensitive filters (a schedule's or a list's name containing "é")
// compare LOWER(name) with a pattern lowered in Go by strings.ToLower:
// Unicode's simple lower-case mapping, letter by letter. PostgreSQL's
// lower() applies the same mapping under a UTF-8 LC_CTYPE (C.UTF-8,
// en_US.UTF-8: the letters of every script); SQLite's built-in lower()
// folds ASCII alone, so "Équipe" did not contain "é" on SQLite and did on
// PostgreSQL. Every SQLite connection this package opens has lower()
// replaced by strings.ToLower, as SQLite's own ICU extension replaces it
// with ICU's, so the same query folds the same letters on both. (A
// PostgreSQL database created with LC_CTYPE C folds ASCII alone:
// docs/postgres.md.)

// SQLiteDriverName is the database/sql name of mattn/go-sqlite3's driver
// with passage's functions on every connection (lower(), above), for a
// caller that opens SQLite itself with options of its own, as the CLI's
// read-only opens do. Pass "sqlite3" to sqlx as the driver name: it picks
// the placeholders and [DialectOf] by it.
const SQLiteDriverName = "sqlite3-passage"

func init() {
	sql.Register(SQLiteDriverName, newSQLiteDriver())
}

// newSQLiteDriver is mattn/go-sqlite3's driver registering passage's
// functions on each connection it opens.
func newSQLiteDriver() *sqlite3.SQLiteDriver {
	return &sqlite3.SQLiteDriver{ConnectHook: registerFunctions}
}

func registerFunctions(conn *sqlite3.SQLiteConn) error {
	return conn.RegisterFunc("lower", unicodeLower, true)
}

// unicodeLower is lower() with strings.ToLower: text lowered, NULL NULL,
// and anything else as it came, as the built-in leaves numbers alone.
func unicodeLower(v any) any {
	switch v := v.(type) {
	case string:
		return strings.ToLower(v)
	case []byte:
		if v == nil { // how mattn/go-sqlite3 hands over a NULL
			return nil
		}
		return strings.ToLower(string(v))
	}
	return v
}
