package tick

// The SQLite cursor store: the statements written once in sql.go, in
// SQLite's ? placeholders. Its immediate transactions hold the write lock
// from their first statement, so acquiring the lease is serialised.

var sqliteStatements = portable()
