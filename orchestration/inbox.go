package orchestration

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/eventstore"
)

// inboxRounds bounds how many times one write looks past signals that
// keep landing on a stream whose append did not take its turn (an entry
// with nothing to append only checks the version, so a signal may land
// between the look and the check). Past it the conflict stands and the
// instance is replayed on the next tick, as after any conflict.
const inboxRounds = 8

// fromInbox reports whether e is appended from outside an execution — a
// signal, a cancel request — rather than decided by one. It never
// contradicts what an execution decided: the execution records its
// decisions after it and sees it on its next wake-up.
func fromInbox(e any) bool {
	switch e.(type) {
	case signalReceived, cancelRequested:
		return true
	}
	return false
}

// inboxOnlySince returns the version of history's last event if every
// event after version came from the inbox, and false if any was decided
// by an execution (another processor's, or an earlier one's that
// recorded the same calls): a real contradiction.
func inboxOnlySince(history []eventstore.Recorded, version int64) (int64, bool) {
	if len(history) == 0 || history[len(history)-1].Version <= version {
		return 0, false
	}
	for _, r := range history {
		if r.Version > version && !fromInbox(r.Event) {
			return 0, false
		}
	}
	return history[len(history)-1].Version, true
}

// appendPastInbox appends batch in tx, entry i expecting its stream at
// versions[i]. An entry that conflicts only because signals or a cancel
// request were appended since versions[i] is appended after them, and
// marked in overtook: an execution's step ran and its result is recorded
// instead of being dropped and the step run again, however often signals
// land while steps run. versions[i] is moved to where the entry was
// appended. An entry whose stream holds decisions it did not load keeps
// its conflict.
func (e *Engine) appendPastInbox(ctx context.Context, tx *sqlx.Tx, batch []eventstore.StreamAppend, versions []int64) (outcomes []eventstore.AppendOutcome, overtook []bool, err error) {
	outcomes, err = e.store.AppendManyTx(ctx, tx, batch)
	if err != nil {
		return nil, nil, err
	}
	overtook = make([]bool, len(batch))
	var conflicted []int
	for i, o := range outcomes {
		if o.Conflict != nil {
			conflicted = append(conflicted, i)
		}
	}
	for round := 0; len(conflicted) > 0 && round < inboxRounds; round++ {
		streams := make([]string, len(conflicted))
		for j, i := range conflicted {
			streams[j] = batch[i].Stream
		}
		// The entries with events took their streams' turns: what is
		// loaded now stays the latest until tx ends.
		histories, err := e.store.LoadManyTx(ctx, tx, streams)
		if err != nil {
			return nil, nil, fmt.Errorf("look past the signals of %d instances: %w", len(conflicted), err)
		}
		var again []eventstore.StreamAppend
		var owners []int
		for _, i := range conflicted {
			latest, ok := inboxOnlySince(histories[batch[i].Stream], versions[i])
			if !ok {
				continue
			}
			versions[i] = latest
			a := batch[i]
			a.Expected = eventstore.Exact(latest)
			again = append(again, a)
			owners = append(owners, i)
		}
		if len(again) == 0 {
			break
		}
		results, err := e.store.AppendManyTx(ctx, tx, again)
		if err != nil {
			return nil, nil, err
		}
		conflicted = conflicted[:0]
		for j, r := range results {
			i := owners[j]
			outcomes[i] = r
			if r.Conflict == nil {
				overtook[i] = true
			} else {
				conflicted = append(conflicted, i)
			}
		}
	}
	return outcomes, overtook, nil
}
