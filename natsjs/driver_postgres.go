package natsjs

import "github.com/jmoiron/sqlx"

// The PostgreSQL inbox. An insert that meets another transaction's
// uncommitted row for the same message waits for it, then does nothing if
// it committed: the message is handled by one of them.

// postgresStatements are the statements in PostgreSQL's $n placeholders.
var postgresStatements = portable().rebind(sqlx.DOLLAR)
