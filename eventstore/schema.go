package eventstore

import (
	"github.com/passage-of-time/passage/internal/sqldb"
)

// component is the name the schema's migrations are recorded under.
const component = "eventstore"

// The events table is the whole store, each database's in its driver's
// file. UNIQUE (stream, version) is what makes two appenders unable to
// both win a version, in one process or many, whatever else goes wrong.
// Appenders of one stream also take turns (see driver.takeTurn), so the
// version each reads is the one it inserts after and Any or StreamExists
// never lose a race. position orders all events of all streams for
// readers that follow the store as a whole.
var migrations = []sqldb.Migration{{
	Version:  1,
	SQLite:   sqliteSchema,
	Postgres: postgresSchema,
}}
