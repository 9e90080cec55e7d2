// Package eventstore keeps append-only streams of events in SQL (SQLite or
// PostgreSQL) with optimistic concurrency, as EventStoreDB, Eventuous and
// Emmett users know it.
//
// A stream is a named sequence of events, each with a version counting from
// 1. [Store.Append] adds events at the end only if an [ExpectedVersion]
// holds: [NoStream], [StreamExists], [Any] or [Exact]. The database decides,
// not a lock in the process: appenders of one stream, in one process or on
// two machines, take turns (on PostgreSQL through an advisory lock per
// stream, on SQLite through the write lock), and the unique (stream,
// version) constraint makes it impossible for two to write the same version
// whatever happens. An append whose expected version does not hold gets a
// [*VersionConflictError] matching [ErrWrongExpectedVersion]; [Any] and
// [StreamExists] appends go after whatever was appended before them.
//
// Events are Go values stored as JSON under a name from a [Registry], so the
// Go type can be renamed and gain or lose fields while old events stay
// readable. [Store.Load] decodes them back into the registered types.
//
// An append is one transaction. [WithInTransaction] hooks run inside it, so
// a projection such as a to-do list commits or rolls back with the events;
// [Store.AppendTx] joins a transaction the caller manages. After commit,
// the events are published to a [Publisher] (the bus).
//
// [Store.AppendMany] appends to many streams in one transaction, each with
// its own expected version: an entry whose expected version does not hold
// gets a [*VersionConflictError] in its [AppendOutcome] and the others
// commit all the same, so a batch of decisions re-evaluates only the
// conflicted ones. It checks every version in one statement and inserts
// the events in one, tens of times faster than an Append per stream
// (BenchmarkAppendMany); [Store.AppendManyTx] does it in the caller's
// transaction. A transaction deciding a batch of aggregates takes their
// turns and loads them in one go with [Store.TakeTurnsTx]: then
// [Turns.AppendMany] checks the expected versions against what was loaded,
// with no statement to read them again, and no writer that takes its turn
// comes between the load and the append.
//
// Each database is a driver: the logic calls an unexported interface
// (driver.go), picked once when the store opens; the statements both
// databases run alike are in sql.go, each database's own (turns, lists of
// streams, inserts of many rows) in its file (driver_sqlite.go,
// driver_postgres.go); the layout and why, docs/design.md.
//
// [Update] is the aggregate workflow: load the stream, fold it into a state,
// let a decision return new events (or none), append them expecting the
// loaded version, and retry a bounded number of times on conflict.
package eventstore
