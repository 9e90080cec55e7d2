package natsjs

import "github.com/passage-of-time/passage/internal/sqldb"

// component is the name the schema's migrations are recorded under.
const component = "natsjs"

// migrations create the inbox table: a row per message a consumer
// handled, keyed by both, and an index on when, which serves Forget.
var migrations = []sqldb.Migration{{
	Version: 1,
	SQLite: `CREATE TABLE natsjs_inbox (
	consumer   TEXT    NOT NULL,
	message_id TEXT    NOT NULL,
	handled_at INTEGER NOT NULL,
	PRIMARY KEY (consumer, message_id)
) WITHOUT ROWID`,
	Postgres: `CREATE TABLE natsjs_inbox (
	consumer   TEXT   NOT NULL,
	message_id TEXT   NOT NULL,
	handled_at BIGINT NOT NULL,
	PRIMARY KEY (consumer, message_id)
)`,
}, {
	// The same on both databases.
	Version: 2,
	SQLite:  `CREATE INDEX natsjs_inbox_handled_at ON natsjs_inbox (consumer, handled_at)`,
}}
