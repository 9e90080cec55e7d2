package eventstore

import (
	"github.com/passage-of-time/passage/internal/sqldb"
)

// component is the name the schema's migrations are recorded under.
const component = "eventstore"

// The events table is the whole store. UNIQUE (stream, version) is what
// makes two appenders unable to both win a version, in one process or
// many, whatever else goes wrong. Appenders of one stream also take turns
// (see driver.takeTurn), so the version each reads is the one it inserts
// after and Any or StreamExists never lose a race. position orders all
// events of all streams for readers that follow the store as a whole; on
// PostgreSQL positions are taken at insert, so a transaction that commits
// later may hold a smaller one.
var migrations = []sqldb.Migration{{
	Version: 1,
	SQLite: `CREATE TABLE eventstore_events (
	position    INTEGER PRIMARY KEY AUTOINCREMENT,
	stream      TEXT    NOT NULL,
	version     INTEGER NOT NULL,
	type        TEXT    NOT NULL,
	data        TEXT    NOT NULL,
	recorded_at INTEGER NOT NULL,
	CONSTRAINT eventstore_events_stream_version UNIQUE (stream, version)
)`,
	Postgres: `CREATE TABLE eventstore_events (
	position    BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	stream      TEXT   NOT NULL,
	version     BIGINT NOT NULL,
	type        TEXT   NOT NULL,
	data        JSONB  NOT NULL,
	recorded_at BIGINT NOT NULL,
	CONSTRAINT eventstore_events_stream_version UNIQUE (stream, version)
)`,
}}
