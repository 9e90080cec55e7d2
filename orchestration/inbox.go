package orchestration

import (
	"context"
	"encoding/json"
	"errors"
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

// Signal sends a signal to an instance: it is appended to its history and
// the instance is made due now, so an Await for it returns. A signal to an
// instance that has ended (completed, failed, cancelled or stuck) is
// refused with an error wrapping ErrFinished, and one to an id never
// started with ErrUnknownInstance: nothing would ever read it.
func (e *Engine) Signal(ctx context.Context, instance, name string, payload any) error {
	b, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("%w: signal %q payload: %v", ErrInvalidArgument, name, err)
	}
	return e.inbox(ctx, "signal", instance, signalReceived{Name: name, Payload: b})
}

// Cancel asks an instance to stop: its next call to Sleep, Await or a new
// Step returns ErrCancelled, its compensations run, and it ends Cancelled.
// Cancelling an instance that has ended is refused with an error wrapping
// ErrFinished, an id never started with ErrUnknownInstance.
func (e *Engine) Cancel(ctx context.Context, instance string) error {
	return e.inbox(ctx, "cancel", instance, cancelRequested{})
}

func (e *Engine) inbox(ctx context.Context, verb, instance string, event any) error {
	if err := checkID(instance); err != nil {
		return err
	}
	err := e.inTx(ctx, func(tx *sqlx.Tx) error {
		stream := streamOf(instance)
		res, err := e.store.AppendTx(ctx, tx, stream, eventstore.StreamExists, event)
		if err != nil {
			return err
		}
		// Appending took the stream's turn, so no execution ends the
		// instance between this read and the commit: an instance found
		// running reads the event on a later wake-up.
		if state, err := e.stateBefore(ctx, tx, stream, res.Version); err != nil {
			return err
		} else if state != Running {
			return fmt.Errorf("%w: it is %s", ErrFinished, state)
		}
		// Remove first: a re-add never brings an item forward.
		if err := e.list.RemoveTx(ctx, tx, instance); err != nil {
			return err
		}
		return e.list.AddTx(ctx, tx, instance, e.clock.Now())
	})
	if errors.Is(err, eventstore.ErrWrongExpectedVersion) {
		return fmt.Errorf("orchestration: %s %s: %w", verb, instance, ErrUnknownInstance)
	}
	if err != nil {
		return fmt.Errorf("orchestration: %s %s: %w", verb, instance, err)
	}
	return nil
}

// inboxTail is how many events before its own an inbox append reads at
// first to find the instance's last decision: signals rarely pile up
// more than that between wake-ups, and a history read whole on every
// signal would make a long-lived instance's signals ever dearer.
const inboxTail = 16

// stateBefore returns the state of the instance of stream as its events
// before version leave it. The state is set by its last event that is not
// from the inbox, so the tail is read first and the whole stream only
// when the tail holds nothing else.
func (e *Engine) stateBefore(ctx context.Context, tx *sqlx.Tx, stream string, version int64) (State, error) {
	for from := max(version-inboxTail, 1); ; from = 1 {
		events, err := e.store.LoadTx(ctx, tx, stream, from)
		if err != nil {
			return "", err
		}
		for i := len(events) - 1; i >= 0; i-- {
			if r := events[i]; r.Version < version && !fromInbox(r.Event) {
				return fold("", events[i:i+1]).State, nil
			}
		}
		if from == 1 {
			return Running, nil // nothing but the inbox's: not even started
		}
	}
}
