// Package workflow is the ordering process of package ordering written a
// second way: as one durable workflow function run by package orchestration,
// instead of an Order aggregate worked by a to-do list.
//
// The process, top to bottom in one function ([Register]):
//
//   - reserve the order's stock in the [Warehouse] (a Step whose idempotency
//     key, orchestration.StepInfo.Key, makes a retried or re-run step reserve
//     once), with the compensation "release stock" registered just before it;
//   - await the "paid" signal ([Pay]) for [PaymentTimeout], 15 minutes from
//     the instance's first run — the processor's first tick after [Place],
//     within a minute when a ticker publishes every minute;
//   - paid: ship (a Step) and end Completed with the [Shipment];
//   - not paid: return an error wrapping [ErrNotPaid]. The engine then runs
//     the compensation, which releases the stock, and the instance ends
//     Failed with that error as its Status.Error. The same compensation runs
//     when the order is cancelled (orchestration.Engine.Cancel, ending
//     Cancelled) or when shipping fails for good.
//
// Not paid in time is the saga unwinding, so it ends Failed: in this engine
// compensations run when the function fails or is cancelled, and only then.
// The history keeps the error as text, so orchestration.Result's error does
// not match ErrNotPaid with errors.Is; [NotPaid] reads it from the status.
//
// A payment that comes after the timeout was recorded changes nothing: the
// signal is appended to the instance's history, but the instance has ended
// and no Await takes it again — the order is neither shipped nor reopened,
// and giving the money back is the payment side's business (check the
// instance's status). A payment signalled after the deadline but before the
// passage of time woke the instance (a ticker down, a processor late) is
// taken, as the to-do-list version lets a payment recorded before the
// timeout handler ran win: in both, the first to be recorded decides.
package workflow
