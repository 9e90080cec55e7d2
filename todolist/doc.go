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
// projected from. A [Projection] declares which events add and remove items
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
// in batches, each claim with a lease, and runs the [Action] for each item.
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
//     re-activatable ([List.Reactivate]), never dropped;
//   - a version conflict (an error with Conflict() bool returning true): no
//     failure, the item is simply tried again on the next tick;
//   - a panic: a failed attempt like any error.
//
// Each batch also adds its outcomes to the list's totals in the database,
// in the statement that removes its done items on PostgreSQL and the same
// transaction on SQLite,
// so any process — a status page that runs no processor — reads them
// ([Stats].Completed, Failures and Parkings, from [List.Stats] and
// [AllStats]).
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
package todolist
