// Package ordering is passage's worked example: an ordering process in which a
// client confirms a cart and must pay before a deadline, and an unpaid order
// is cancelled automatically once the deadline has passed — safely, even when
// the payment lands at the very last moment.
//
// It combines every part of passage:
//
//   - the events of an order (OrderInitiated, OrderPaymentRecorded,
//     OrderCompleted, OrderCancelled) are kept in an [eventstore.Store], one
//     stream per order;
//   - the [Order] aggregate folds them ([Evolve]) and takes decisions that
//     return new events: [Initiate], [Order.RecordPayment], [Order.Complete],
//     [Order.Cancel] and [Order.TimeOut]; a closed order decides nothing;
//   - PendingOrders, a to-do list of open orders and their deadlines, is
//     projected from those events in the transaction that appends them
//     ([NewPendingOrders]), so it never drifts from the store;
//   - [HandleCancelOrders] works that list whenever a tick.MinuteHasPassed
//     is published, a batch of due orders at a time, each batch in the one
//     transaction that takes it from the list (todolist.HandleTxBatch):
//     the orders are loaded, each is asked to time out, and the
//     cancellations are appended, each expecting the version that was
//     loaded, together with the removal of their to-do items; they are
//     published once that transaction has committed. A payment that wins
//     the race makes its order's append fail with a version conflict, the
//     order is loaded again, and being paid it decides nothing, while the
//     rest of the batch is cancelled. (On SQLite no payment can come
//     between: the batch's transaction holds the database's write lock, so
//     a payment waits for it, and then finds the order cancelled.)
//     [HandleCancelOrder] does the same an order at a time, each in a
//     transaction of its own.
//
// [System] wires all of this on one database and bus, and [RunDemo] tells the
// story on a terminal: it places orders, pays some, lets time pass on a fake
// clock through a real tick.Ticker, and sums up what happened.
//
// Package demo/workflow writes the same process as one durable workflow
// function, with a stock reservation released by a compensation.
//
// The package lives outside example/ because the ticker binary runs it
// ("ticker demo") and ships no example code; go run ./example/order tells
// the same story as a program of its own.
package ordering
