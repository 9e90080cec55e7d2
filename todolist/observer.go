package todolist

// Observer is told what a [Processor] does. Every field is optional. Hooks
// run on the processing goroutine, between items, so they should be quick;
// with several processors they run concurrently.
type Observer struct {
	// Done is called when an item's action returned nil (the item is then
	// removed, unless it was re-added, removed or re-claimed meanwhile).
	Done func(list string, item Item)
	// Failed is called when an action failed and the item will be retried;
	// item carries the new attempt count, error and next attempt — when
	// it may be claimed again, which a failure written means it will be:
	// it has left its batch's claim.
	Failed func(list string, item Item, err error)
	// Parked is called when an action failed for the last allowed time and
	// the item was parked.
	Parked func(list string, item Item, err error)
	// LeaseLost is called when a batch's lease was lost: it ran out
	// before the batch was settled (renewals failed or came too late), or
	// a renewal found the claim lapsed or taken by another processor. err
	// wraps [ErrLeaseLost] and says which. The batch started nothing
	// more, and its outcomes not yet written were dropped (see
	// [Result.LeasesLost]).
	LeaseLost func(list string, err error)
	// Tick is called at the end of each tick that did not fail, with its
	// counts, including the backlog it left.
	Tick func(list string, r Result)
}
