package tick

// The SQLite cursor store: the statements written once in driver.go, in
// SQLite's ? placeholders. Its immediate transactions hold the write lock
// from their first statement, so acquiring the lease is serialised.

var sqliteStatements = portable()

// sqliteSchema: one row per unit (tick_cursors) and one lease row
// (tick_lease). PostgreSQL creates the same tables.
const sqliteSchema = `CREATE TABLE tick_cursors (
	unit     TEXT PRIMARY KEY,
	boundary BIGINT NOT NULL
);
CREATE TABLE tick_lease (
	name       TEXT PRIMARY KEY,
	holder     TEXT NOT NULL,
	term       BIGINT NOT NULL,
	expires_at BIGINT NOT NULL
);`
