// Package outbox delivers what a transaction decided only after it
// commits, and all of it: the transactional outbox, with a relay per sink
// that reads committed records from a durable checkpoint of its own.
//
// A deciding transaction (a schedule's slot fired, a boundary emitted)
// records what leaves the process with [Outbox.WriteTx], in that same
// transaction: a rolled-back decision leaves no record, so nothing
// uncommitted is ever delivered. Each record has a stream (what orders
// it: a schedule, a unit of time) and a key, its stable identity (the slot
// id of a run, the unit and boundary of a tick); writing a key that is
// there already does nothing, so a decision retried after a crash records
// once.
//
// A [Relay] delivers one sink's records: every committed record at least
// once, after the commit, under its key, so a receiver de-duplicates by
// the key. A stream's records reach the sink in order; different streams
// are delivered in parallel (WithParallel). A refused delivery is
// retried with backoff (nothing is decided again), and a record refused
// WithMaxAttempts times is parked: its stream moves on, and the record
// stays listed by [Outbox.Parked] until retention prunes it.
//
// # Where a new sink starts
//
// A sink the outbox has never seen (no checkpoint, no refusal stored)
// starts with the records written from the moment [NewRelay] made its
// relay, by the outbox's clock: a webhook or a NATS sink added to a
// database with a year of records delivers none of that year. [WithFrom]
// says otherwise: [FromBeginning] (every record held), [FromInstant] (the
// records recorded from then on), or [ParseFrom]'s "beginning", "now" or
// RFC 3339 instant, as a --from flag takes them. The relay decides the
// place at its first Pass or Run ([Relay.Origin]) and stores it
// as the sink's checkpoint before it delivers anything, so its next
// relays resume there whatever they are told, and tells the Observer's
// Started where it started and how many records it leaves behind. The
// place never passes a record a transaction still open could commit (the
// horizon below), so a new sink may get a few records written just
// before it started; never fewer than it was told.
//
// # Retention
//
// [Outbox.Prune] deletes the records every sink the outbox knows has
// passed (taken or parked: at or before that sink's checkpoint) and that
// were recorded longer ago than a retention ([DefaultRetention], a week,
// unless told); [Outbox.RunPruner] does so in the background, at once
// and then every minute. A sink that stops for good holds every later
// record back until [Outbox.ForgetSink] forgets it; with no sink known
// nothing is pruned. Pruning never holds up delivery: it deletes in
// batches of [WithPruneBatch] records (1,000), each a short statement of
// its own, and rests four times as long as each batch took, so the
// relays and the writers wait on it for one batch at most, and it takes
// about a fifth of the database's time. Since checkpoints stand below
// PostgreSQL's horizon, no record that a late transaction could precede
// is pruned. The outbox's size and the age of its oldest record are
// gauges ([WithMeterProvider]) and [ReadSize] reads them for a status
// page.
//
// # No barrier between streams
//
// [Relay.Run] gives each stream a lane of its own: a dispatcher reads
// the outbox in order from a cursor and hands each record to its
// stream's lane, and WithParallel workers take the lanes in turn, one
// record at a time. A receiver that stalls on one record holds that
// stream, its retries and one request in flight, and nothing else; a
// refused record waits out its backoff without holding a request. What
// waits in memory is bounded by WithPage (a page waiting for a request, a
// page per lane in flight, one record per lane in backoff); a lane that
// cannot keep what the dispatcher read reads it again itself, after
// what it holds. The sink's checkpoint is the minimum of what is fully
// settled — just before the first record of any lane not yet settled,
// never past what the dispatcher read — so it never passes a stalled
// record; each stream's checkpoint moves as soon as the sink took its
// record, many streams' in one transaction (group commit). A record is
// offered only once its stream's previous one is recorded, so across a
// stop or a crash at most the record each stream had in flight (at most
// WithParallel) is delivered twice, and none is skipped. [Relay.Pass]
// delivers one page and waits for all it started: a loop of passes
// holds every stream behind the slowest, which suits tests, drains and
// run-once commands, not a long-running relay.
//
// # Reading what committed, in order
//
// Positions are assigned when a record is inserted, not when its
// transaction commits, so on PostgreSQL a record can commit after one
// with a higher position was read: a reader that moved its checkpoint
// past the higher one would skip it for ever. Each record therefore
// carries the id of the transaction that wrote it, records are read in
// (transaction, position) order, and every read (a pass, Run's
// dispatcher, a lane reading its own stream) takes only the records of
// transactions older than every transaction still running
// (pg_snapshot_xmin): none of those can still add a record, so no
// checkpoint passes one that is yet to commit. A long transaction
// that wrote a record (or any transaction holding an id) delays delivery
// until it ends; it never loses a record. SQLite has one writer at a
// time, so its positions follow commit order.
//
// Each database is a driver (driver.go), picked once when the outbox
// opens: the statements are written once (sql.go) and each database's
// file (driver_sqlite.go, driver_postgres.go) gives their dialect; why
// drivers are unexported is written once, in docs/design.md.
//
// The relay's checkpoints are per sink and per stream, moved only forward
// (several relays of one sink deliver some records twice, never skip one),
// and its retries are stored, so a restart resumes where the last relay
// stopped and counts attempts across restarts.
package outbox
