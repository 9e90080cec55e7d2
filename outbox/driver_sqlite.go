package outbox

// The SQLite outbox. SQLite has one writer at a time, so records commit in
// id order: every record read was committed, none can commit below it
// later, and tx is always 0.

// sqliteStatements need no horizon: the single writer commits in id
// order.
var sqliteStatements = portable(`1 = 1`)

// sqliteSchema: outbox_records holds what was decided, id orders records
// by insertion. outbox_checkpoints holds, per sink, the (tx, id) up to
// which every record is delivered or parked (stream ”), and per stream
// the last of the stream's records delivered or parked. outbox_attempts
// holds the refusals of records not delivered yet, and the parked ones.
const sqliteSchema = `CREATE TABLE outbox_records (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	tx          INTEGER NOT NULL DEFAULT 0,
	key         TEXT    NOT NULL UNIQUE,
	stream      TEXT    NOT NULL,
	type        TEXT    NOT NULL,
	body        BLOB    NOT NULL,
	recorded_at INTEGER NOT NULL
);
CREATE TABLE outbox_checkpoints (
	sink   TEXT    NOT NULL,
	stream TEXT    NOT NULL,
	tx     INTEGER NOT NULL,
	id     INTEGER NOT NULL,
	PRIMARY KEY (sink, stream)
);
CREATE TABLE outbox_attempts (
	sink       TEXT    NOT NULL,
	record     INTEGER NOT NULL,
	attempts   INTEGER NOT NULL,
	next_at    INTEGER NOT NULL,
	last_error TEXT    NOT NULL,
	parked     INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (sink, record)
);`
