//go:build cgo

package sqldb

import (
	"database/sql"
	"strings"

	"github.com/mattn/go-sqlite3"
)

func init() {
	sql.Register(SQLiteDriverName, newSQLiteDriver())
}

// newSQLiteDriver is mattn/go-sqlite3's driver registering passage's
// functions on each connection it opens.
func newSQLiteDriver() *sqlite3.SQLiteDriver {
	return &sqlite3.SQLiteDriver{ConnectHook: registerFunctions}
}

func registerFunctions(conn *sqlite3.SQLiteConn) error {
	return conn.RegisterFunc("passage_lower", unicodeLower, true)
}

// unicodeLower is passage_lower(): text lowered by strings.ToLower, NULL
// NULL, and anything else as it came.
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
