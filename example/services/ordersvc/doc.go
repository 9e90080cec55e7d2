// Package ordersvc is the order service of the two-service example: the
// ordering process of demo/ordering — the Order aggregate, the
// PendingOrders to-do list and the cancellation of unpaid orders — in a
// process that runs no ticker. The passage of time comes from the time
// service's stream through a durable natsjs.Consumer, which publishes
// each minute, typed again as a tick.MinuteHasPassed, on the bus the
// ordering System listens to: its to-do list handler is the same as in a
// process with a ticker of its own.
//
// The time service's schedule runs come through a durable consumer of
// their own, and each writes one report in the transaction that records
// its slot id in the service's inbox (natsjs.Once): a run delivered again
// reports nothing twice.
//
// The demo places two orders, pays one, and ends once neither is pending
// — the other was cancelled when its deadline passed — and a run was
// reported. With
// -follow, for a time service on a simulated clock, the service's own
// clock is set to each minute read from the stream before the handlers
// see it (the to-do list takes only what is due by its clock's now).
//
// Run it with `go run ./example/services orders [flags]` (see Run).
package ordersvc
