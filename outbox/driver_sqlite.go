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
