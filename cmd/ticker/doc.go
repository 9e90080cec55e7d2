// Command ticker publishes the passage of time for a system and lets an
// operator see what is going on.
//
//	ticker run      publish minute/hour/day… events (JSON lines on stdout, or signed webhooks)
//	ticker status   each unit's cursor, next boundary and lease; every to-do list's backlog
//	ticker preview  the next boundaries of a unit in a time zone, to check DST
//	ticker demo     the ordering example end to end on an accelerated clock
//	ticker version  the version
//
// State lives in --db: the embedded SQLite file passage.db by default, or a
// postgres:// DSN shared by several machines, of which one emits at a time.
// SIGINT and SIGTERM stop "run" gracefully: the event in flight is finished,
// the cursor saved, and the exit code is 0. Bad flags exit 2, failures 1.
//
// The logic lives in internal/cli, which writes to the io.Writers it is given
// so tests drive it exactly as a user does.
package main
