package tick

import "github.com/passage-of-time/passage/internal/sqldb"

// component is the name the schema's migrations are recorded under.
const component = "tick"

// migrations create one row per unit (tick_cursors) and one lease row
// (tick_lease), the same tables on both databases.
var migrations = []sqldb.Migration{{
	Version: 1,
	SQLite: `CREATE TABLE tick_cursors (
	unit     TEXT PRIMARY KEY,
	boundary BIGINT NOT NULL
);
CREATE TABLE tick_lease (
	name       TEXT PRIMARY KEY,
	holder     TEXT NOT NULL,
	term       BIGINT NOT NULL,
	expires_at BIGINT NOT NULL
);`,
}}
