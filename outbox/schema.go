package outbox

import "github.com/passage-of-time/passage/internal/sqldb"

// migrations create the outbox's tables, each database's in its driver's
// file.
var migrations = []sqldb.Migration{{
	Version:  1,
	SQLite:   sqliteSchema,
	Postgres: postgresSchema,
}}
