package outbox

// The SQLite outbox. SQLite has one writer at a time, so records commit in
// id order: every record read was committed, none can commit below it
// later, and tx is always 0.

// sqliteStatements need no horizon: the single writer commits in id
// order. Since tx is always 0, a position compares as its id with tx
// equal, which SQLite reads as a range of the rowid (row values compared,
// with no index on tx, were a scan of every record and a sort, each read).
var sqliteStatements = portable(dialect{
	horizon: `1 = 1`,
	after:   `r.tx = ? AND r.id > ?`,
	upTo:    `r.tx = ? AND r.id <= ?`,
	order:   `r.id`,
	last:    `r.id DESC`,
})

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

// sqliteStreamIndex serves a lane's reads of its own stream
// (streamRecords) as a range of the index (stream = ? AND tx = ? AND
// id > ?) instead of a scan of every record.
const sqliteStreamIndex = `CREATE INDEX IF NOT EXISTS outbox_records_stream ON outbox_records (stream, tx, id)`
