package todolist

import "time"

// Result counts what one tick did.
type Result struct {
	// Cutoff is the due time up to which items were taken: the event's
	// boundary, or the processor's clock if that is earlier.
	Cutoff time.Time
	// Claimed counts the items claimed.
	Claimed int
	// Done counts actions that returned nil.
	Done int
	// Failed counts actions that failed and will be retried.
	Failed int
	// Parked counts actions that failed for the last allowed time.
	Parked int
	// Conflicts counts actions that hit a version conflict; they are tried
	// again on the next tick.
	Conflicts int
	// Released counts claimed items the budget or a lease running short
	// left unstarted; the next tick takes them.
	Released int
	// Lost counts outcomes not written because the item had changed hands
	// meanwhile: it was removed, re-added with a later due time, or the
	// batch's lease was lost (see LeasesLost). The item is then left as
	// the other party left it.
	Lost int
	// LeasesLost counts the batches whose lease was lost (see
	// [Observer].LeaseLost); their outcomes not yet written count as
	// Lost, and their items are worked again by whoever claims them.
	LeasesLost int
	// Backlog counts the items due at the cutoff that the tick left for
	// the next one: those a budget stopped it from taking, and those
	// re-added or changed while it worked. A transactional batch
	// processor's tick that ran dry leaves none and does not count.
	Backlog int
}
