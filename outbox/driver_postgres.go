package outbox

import "github.com/jmoiron/sqlx"

// The PostgreSQL outbox. Ids are taken at insert, not at commit, so a
// record can commit after one with a higher id was read. Each record
// keeps its transaction's id (tx, xid8 as a bigint), records are read in
// (tx, id) order, and only those of transactions older than every one
// still running: none of those can still add a record below the
// checkpoint.

// postgresStatements read up to the horizon of the oldest transaction
// still running, in $n placeholders.
var postgresStatements = portable(dialect{
	horizon: `r.tx < pg_snapshot_xmin(pg_current_snapshot())::text::bigint`,
	after:   `(r.tx, r.id) > (?, ?)`,
	upTo:    `(r.tx, r.id) <= (?, ?)`,
	order:   `r.tx, r.id`,
	last:    `r.tx DESC, r.id DESC`,
}).rebind(sqlx.DOLLAR)
