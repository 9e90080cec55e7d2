// Command ticker publishes the passage of time for a system and lets an
// operator see what is going on.
//
//	ticker run       publish minute/hour/day… events (JSON lines on stdout, or signed webhooks) and fire stored schedules
//	ticker status    each unit's cursor, next boundary and lease; every to-do list's backlog
//	ticker preview   the next boundaries of a unit in a time zone, to check DST
//	ticker schedule  stored schedules: preview, add, list, pause, resume, trigger, backfill, delete, prune
//	ticker workflow  durable workflow instances: list, show, signal, cancel
//	ticker serve     the dashboard alone (no ticker)
//	ticker demo      the ordering example end to end on an accelerated clock
//	ticker version   the version (also ticker --version)
//	ticker completion  the completion script of bash, zsh or fish
//
// "ticker -h" lists them, "ticker help <command>" or "ticker <command> -h"
// a command's flags; docs/reference has them all, generated from the
// commands (go generate ./cmd/ticker).
//
// State lives in --db: the embedded SQLite file passage.db by default, or a
// postgres:// DSN shared by several machines, of which one emits at a time.
// SIGINT and SIGTERM stop "run" within 30 s: the pass in flight is finished,
// the cursor saved, the lease released, and the exit code is 0; a command
// stopped before its work was done exits 128+signal. Bad flags exit 2,
// failures 1.
//
// The logic lives in internal/cli, which writes to the io.Writers it is given
// so tests drive it exactly as a user does.
package main

//go:generate go test ./internal/reference -run TestTheReferenceIsCurrent -update
