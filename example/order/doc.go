// Command order runs passage's worked example: an ordering process in which
// unpaid orders are cancelled automatically when their payment deadline has
// passed. It tells the story on the terminal, on a fake clock driven minute by
// minute through a real ticker, bus and database, and ends with a summary.
//
//	go run ./example/order [-orders 20] [-paid 0.5] [-seed 1] [-db path-or-postgres-dsn]
//
// Without -db it uses a SQLite file in a temporary directory, removed at the
// end. The library it runs is package
// github.com/passage-of-time/passage/demo/ordering, the to-do-list version
// of the process; package github.com/passage-of-time/passage/demo/workflow
// is the same process as one durable workflow function. Both live outside
// example/ because "ticker demo" runs them too, and the shipped binary
// imports no example.
package main
