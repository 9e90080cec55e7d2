package tick

import "github.com/jmoiron/sqlx"

// The PostgreSQL cursor store: the statements written once in sql.go, in
// PostgreSQL's $n placeholders, on the tables of schema.go. Under
// READ COMMITTED a compare-and-swap that waited for another's row lock
// re-checks its condition on the row as committed, so two replicas
// cannot both move a cursor from one boundary.

var postgresStatements = portable().rebind(sqlx.DOLLAR)
