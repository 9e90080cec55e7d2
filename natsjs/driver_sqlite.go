package natsjs

// The SQLite inbox. Its immediate transactions hold the database's write
// lock from the first statement, so two consumers recording one message
// never both see it as new.

// sqliteStatements are the statements in SQLite's ? placeholders.
var sqliteStatements = portable()
