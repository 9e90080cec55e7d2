// Package todolist keeps to-do lists: minimal read models of pending work
// (an ID and the time it falls due, such as an unpaid order and its payment
// deadline) that are worked whenever time passes.
//
// This is the To-Do List pattern paired with Passage of Time: instead of
// scheduling a message for each deadline — which fires after the order was
// paid, or is lost with the process — a handler asks on every tick "which
// items are due now?" and acts on them. A lost, late or duplicated tick costs
// nothing, and removing the item is the cancellation.
//
// # Lists
//
// [Open] returns a named [List]. Every list of a database shares one table,
// created on first use; names are data, never SQL. [List.Add] and
// [List.Remove] are idempotent, and their Tx forms run inside a caller's
// transaction, so the list changes atomically with the events it is
// projected from. [List.AddMany] and [List.AddManyTx] add many items by
// exactly Add's rules, a statement per thousands of items instead of one
// per item: as fast as hand-written multi-row INSERTs of the same rows
// (BenchmarkAddMany measures both in one run). A [Projection] declares which events add and remove items
// ([AddOn], [RemoveOn]) and applies them in the append transaction
// ([Projection.Apply]) or from a bus ([Projection.Subscribe]).
//
// # Processing
//
// [Handle] returns a bus handler for any passage-of-time event:
//
//	handler, err := todolist.Handle[tick.MinuteHasPassed](pending, cancelUnpaidOrder)
//	...
//	bus.Subscribe(b, handler)
//
// On each event the [Processor] claims the items due at the event's boundary
// in batches, each claim with a lease (see Leases below), and runs the
// [Action] for each item.
// Claiming and removing are set-wise, a statement per batch, not per item.
// On SQLite, one writer at a time, the claim is a lease written on the
// claimed rows. On PostgreSQL a batch is held by one row that lists its
// IDs, taken under a per-list advisory lock held only while the batch is
// picked: concurrent processors skip each other's IDs without a write or a
// row lock on every item, and no lock is held while actions run, so an
// action's own transaction may remove or re-add its item. The outcomes:
//
//   - nil: the item is done and removed — unless it was re-added with a
//     later due time or re-claimed meanwhile, which is kept (a re-added
//     item stays hidden until this run ends, then it is new work);
//   - an error: the attempt is counted and the item backs off exponentially,
//     up to a cap; after the last allowed attempt it is parked with its
//     error — kept, counted ([List.Stats]), listable ([List.Parked]) and
//     re-activatable ([List.Reactivate]), never dropped. The failure is
//     written at once and the item leaves the batch's claim, so it is
//     retried at its backoff time ([Item].NextAttempt, as the observer is
//     told), even while the rest of its batch still runs;
//   - a version conflict: no failure, the item is simply tried again on
//     the next tick (see Conflicts below);
//   - a panic: a failed attempt like any error.
//
// # Several processors
//
// On PostgreSQL a second processor on the same list adds throughput:
// claims take turns under a per-list advisory lock held only for the
// pick, while actions and settles of different batches overlap.
// BenchmarkProcess measures one and two workers beside a set-based
// one-statement floor (the figures are in docs/performance.md, from the
// README). On SQLite one writer at a time is the limit: more processors
// add nothing to the writes.
//
// # Deadlines within a second
//
// A processor driven by MinuteHasPassed acts on an item up to a minute
// after it falls due. When that is too late, a Runner (NewRunner) works
// the list on its own: after each pass it reads the earliest due time of
// the list's unparked items (one indexed query) and sleeps until then, or
// MaxWait (1 s) at most, so that items added by other processes are seen
// too; Poke announces an item added in this process. How late actions
// run under load is measured by BenchmarkRunnerLateness (both backends;
// figures in docs/performance.md). It remains
// level-triggered: each wake-up works whatever is due by the clock, so a
// lost, late or early wake-up costs nothing, and ticks may drive the same
// list as well. A wake-up at the earliest item was chosen over a finer
// tick unit: it costs nothing while nothing is due and needs no change to
// the ticker.
//
// # Batches
//
// [NewBatchProcessor] and [HandleBatch] take a [BatchAction] instead: it
// is given each claimed batch at once and returns one outcome per item,
// so that it can load the batch's aggregates in one query, decide them,
// and commit all their changes in one transaction — as the event store's
// AppendMany does, each stream with its own expected version, a conflict
// on one failing none of the others. A statement per batch instead of
// several per item is what lets a batch action time out orders at a good
// fraction of what hand-written SQL does (the ordering example's
// BenchmarkTimeouts measures both in one run).
//
// Each outcome means for its item what an [Action]'s error means: nil is
// done, a conflict anywhere in the error's tree (see Conflicts) is tried
// again next tick without counting an attempt, any other error is a
// failure that backs off and parks. The batch action's own error, its
// panic, or a slice whose length is not the batch's ([ErrBatchOutcomes])
// is every item's outcome. The rest is the per-item processor's, item for
// item: the claim and its lease (renewed while the batch action runs; a
// batch starts only with at least a third of its lease left; outcomes
// are written only while it holds), the totals (the ctx of a batch action
// completes any item of its batch that it removes, see Totals), the
// [Observer]'s Done, Failed and Parked for each item, and [Result]. The
// time budget is checked between batches, and [WithBatchSize] bounds how
// many items one call decides. A [Projection] applied to the events of a
// whole batch removes each run of items in a statement or two.
//
// # Batches in one transaction
//
// [NewTxBatchProcessor] and [HandleTxBatch] take a [TxBatchAction]: it is
// given the transaction that took its batch, and the batch's outcomes are
// written in that transaction before it commits. A batch is then one
// commit instead of three (the claim, the action's own, the settle), and
// no claim is written: on PostgreSQL the rows are locked FOR UPDATE SKIP
// LOCKED, so that processors on several machines share a list's due items
// between them; on SQLite the transaction holds the database's one write
// lock. Either way what the action decided and what the list records of
// it commit together or not at all: a crash, a cancelled ctx or a failed
// commit leaves every item due as it was, at once, with no lease to wait
// out and no attempt counted.
//
// The price is the transaction's length: the batch's rows (and on SQLite
// every other writer) wait for the action. It suits actions that only
// write to the list's database, and quickly — a scheduler recording its
// runs, a batch of aggregates deciding through an event store on the same
// database — and not actions that call out to other services. Leases do
// not apply, so [WithLease] has no effect, Released and LeasesLost stay
// zero, and Lost counts only failures not recorded because the item had
// changed meanwhile (the action re-added it, or, after a batch that failed
// as a whole was rolled back, another processor took it). [WithWorkers] lets one tick work several batches
// at once, each in its own transaction: on PostgreSQL that overlaps their
// writes, where one session leaves the server's other cores idle. An item the action changes through the list with
// its ctx and tx is left as the action left it; a done item is otherwise
// removed. A list is best worked by processors of one kind: a claiming
// processor does not see the rows a transactional one holds, so an item
// may then be worked by both, which [Action]'s at-least-once rule allows
// but which wastes the work.
//
// # Conflicts
//
// An error is a version conflict when its tree holds, anywhere, a value
// with a method Conflict() bool that returns true: the error itself, what
// it wraps (%w), every branch of an [errors.Join], all the way down. A
// value whose Conflict() returns false is just another node: it hides no
// conflict beside or beneath it. A tree that mixes a conflict with real
// failures is a conflict: the action decided on state that had changed
// under it, so its other errors are not trusted either; the item is tried
// again on the next tick without counting an attempt, and a failure that
// persists comes back on its own then and is counted.
//
// # Leases
//
// A claim holds its batch for a lease ([WithLease]). While the batch's
// actions run, the processor renews the lease every third of it, so an
// action may take longer than the lease: the lease is how long the items
// of a processor that died wait before others take them, not a limit on
// actions. Before each item the processor checks its lease, and it starts
// none once the lease is lost or less than a third of it is left — an
// action that starts has at least that long to finish even if every
// renewal from then on fails. The rest of the batch is then released and
// the tick ends; the next tick takes them. A lost lease — one that ran out
// before the batch was settled, or whose renewal found the claim lapsed or
// taken by another processor — is reported ([Observer].LeaseLost with
// [ErrLeaseLost], [Result].LeasesLost).
//
// Outcomes are written only while the lease holds. A failure is written
// as it happens; the done items of a batch are removed together when the
// batch ends, in one statement: settling each item as it finishes would
// cost a round trip per item, most of a batch's time on PostgreSQL, and
// the renewals already keep the claim for as long as the batch runs. Once
// a lease is lost nothing more of its batch is written, since another
// processor may be working the items already; they are worked again.
//
// So an action that succeeded is not run again, and no item runs on two
// processors at once, as long as its processor keeps its lease — that is,
// unless the processor stalls, or loses its database, for two thirds of a
// lease, or dies. Then its items are worked again: at least once, never
// lost.
//
// # Totals
//
// The list's totals live in the database, so any process — a status page
// that runs no processor — reads them ([Stats].Completed, Failures and
// Parkings, from [List.Stats] and [AllStats]). An item is completed when
// its row is deleted because its processing succeeded, and it is counted
// by the statement that deletes it, in that statement's transaction, by
// the same rule on both engines:
//
//   - an action that removes its own item (a batch action: any item of
//     its batch) with [List.RemoveTx] (or [List.Remove]) under the ctx
//     its processor gave it — directly, or
//     through a [Projection] applied in the transaction that appends the
//     action's events — counts it in that transaction;
//   - the items whose action returned nil and which are still on the list
//     are deleted, and counted, when their batch is settled: in the
//     statement that deletes them on PostgreSQL, in the same transaction
//     on SQLite, and only while the batch's lease holds.
//
// A row is deleted once, so an item is completed once, and its count
// commits with its removal, whatever happens to the processor afterwards:
// a processor killed in the middle of a batch leaves no removal uncounted.
// A success that finds its item already gone — removed by its own action,
// or by the processor that took it over after a lost lease — counts
// nothing more. Not completions: a removal by anything but the item's own
// action (an event handled outside any action, such as a payment; another
// item's action), and a move to a later due time ([List.Add]: the same
// item, completed when a later run removes it; a Remove and Add in the
// action's transaction makes a new item, so the one worked is completed).
// An action that removes its item and then returns an error has still
// removed it: it is completed, and there is no failure to record. The
// successes of a batch that lost its lease, or whose processor died,
// before it was settled are not counted while their items are still on
// the list: whoever works them again counts them. Failures and parkings
// are counted when their batch is settled; a processor that dies first
// leaves them out of the totals (the items keep their attempts and
// errors). A processor whose context is cancelled settles, and counts,
// what its batch did first.
//
// A processor that dies leaves its claims behind; they lapse after the lease
// and another processor takes the items. Several processors may work one
// list at once without working the same item at the same moment. A time and
// a count budget per tick keep a huge backlog from blocking the tick; the
// rest is left for the next tick and reported ([Result.Backlog],
// [Observer]).
//
// All times are stored as Unix nanoseconds (UTC); the processor's clock is a
// [clockwork.Clock], so tests drive it with a fake clock.
//
// # Metrics and traces
//
// A list and its processors record through the OpenTelemetry metric API
// ([WithMeterProvider]; the global provider by default): items added,
// completed, failed and parked, the lateness of each action from its
// item's due time, and the list's backlog, each with the list's name as
// its one attribute. The counters count what this process did; [Stats]
// reads the totals of every process from the database. The [Observer]
// hooks are called as before, for anything else. Each action runs in a
// span ([WithTracerProvider]) linked to the span of the tick that caused
// the pass. The library imports the API only: the application installs
// an SDK and an exporter, and without one neither costs an allocation.
//
// # Databases
//
// The logic calls two unexported driver interfaces, the list's (adds,
// removes, reads) and its processors' (claims, leases, settles), and never
// asks which database it runs on; each database's statements and tuning
// (SQLite's claims on the rows, PostgreSQL's claim rows, raw pgx scans and
// ctid settles) live in that database's driver, picked once when a list is
// opened or a processor made, and one conformance suite runs every driver
// through both; the layout and why, docs/design.md.
package todolist
