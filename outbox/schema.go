package outbox

import "github.com/passage-of-time/passage/internal/sqldb"

// migrations create the outbox's tables, each database's in its driver's
// file.
var migrations = []sqldb.Migration{{
	Version:  1,
	SQLite:   sqliteSchema,
	Postgres: postgresSchema,
}, {
	// A lane reading its own stream again (Run) reads a range of this
	// index; so does nothing else.
	Version:  2,
	SQLite:   sqliteStreamIndex,
	Postgres: postgresStreamIndex,
}}
