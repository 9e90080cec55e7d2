package orchestration

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/passage-of-time/passage/eventstore"
)

// State is where an instance is.
type State string

// The states of an instance.
const (
	Running   State = "running"
	Completed State = "completed"
	Failed    State = "failed"
	Cancelled State = "cancelled"
	Stuck     State = "stuck"
)

// Status is what an instance's history says about it.
type Status struct {
	Instance, Workflow string
	State              State
	// Error is the failure, the replay mismatch of a stuck instance, or "".
	Error string
	// StartedAt is when the instance was started; Events how many events
	// its history holds.
	StartedAt time.Time
	Events    int64
	// WaitingUntil is the wake-up of a suspended instance (its latest
	// timer, retry or await), zero otherwise.
	WaitingUntil time.Time
	// Patches are the patches whose new branch the instance took (their
	// markers are in its history), in the order it took them.
	// OldBranches are those whose old branch it is noted to take: it had
	// passed their point before they were deployed, and has woken since
	// (see Patched; one that has not woken since is in neither).
	Patches, OldBranches []string
	output               json.RawMessage
}

// HasPatch reports whether the instance took the new branch of patch id:
// its history holds the marker.
func (s Status) HasPatch(id string) bool { return slices.Contains(s.Patches, id) }

// Status returns an instance's status, or an error wrapping
// ErrUnknownInstance.
func (e *Engine) Status(ctx context.Context, instance string) (Status, error) {
	history, err := e.store.Load(ctx, streamOf(instance), 0)
	if err != nil {
		return Status{}, fmt.Errorf("orchestration: status of %s: %w", instance, err)
	}
	if len(history) == 0 {
		return Status{}, fmt.Errorf("orchestration: status of %s: %w", instance, ErrUnknownInstance)
	}
	return fold(instance, history), nil
}

func fold(instance string, history []eventstore.Recorded) Status {
	st := Status{Instance: instance, State: Running, Events: int64(len(history))}
	for _, r := range history {
		switch e := r.Event.(type) {
		case workflowStarted:
			st.Workflow, st.StartedAt = e.Workflow, e.At
		case timerScheduled:
			st.WaitingUntil = e.Until
		case awaitStarted:
			st.WaitingUntil = e.Until
		case stepAttemptFailed:
			st.WaitingUntil = e.RetryAt
		case patchMarked:
			st.Patches = append(st.Patches, e.ID)
		case patchOldBranch:
			st.OldBranches = append(st.OldBranches, e.ID)
		case timerFired, signalConsumed, awaitTimedOut, stepCompleted:
			st.WaitingUntil = time.Time{}
		case workflowCompleted:
			st.State, st.output, st.WaitingUntil = Completed, e.Output, time.Time{}
		case workflowFailed:
			st.State, st.Error, st.WaitingUntil = Failed, e.Error, time.Time{}
		case workflowCancelled:
			st.State, st.WaitingUntil = Cancelled, time.Time{}
		case workflowStuck:
			st.State, st.Error, st.WaitingUntil = Stuck, e.Error, time.Time{}
		}
	}
	return st
}

// Result returns a completed instance's output; for a failed, cancelled or
// stuck one its status and an error saying so; for a running one
// ErrNotFinished.
func Result[O any](ctx context.Context, e *Engine, instance string) (O, Status, error) {
	var out O
	st, err := e.Status(ctx, instance)
	if err != nil {
		return out, st, err
	}
	switch st.State {
	case Completed:
		if err := json.Unmarshal(st.output, &out); err != nil {
			return out, st, fmt.Errorf("orchestration: result of %s does not fit %T: %w", instance, out, err)
		}
		return out, st, nil
	case Running:
		return out, st, fmt.Errorf("orchestration: result of %s: %w", instance, ErrNotFinished)
	}
	return out, st, fmt.Errorf("orchestration: %s is %s: %s", instance, st.State, st.Error)
}
