package orchestration

import (
	"encoding/json"
	"time"

	"github.com/passage-of-time/passage/eventstore"
)

// The history of an instance is one event stream, "workflow/<id>". The
// events the function's calls produce ("decisions") are replayed in
// order; signals and cancel requests come from outside and are read as
// an inbox. The events are the package's own: users read a history
// through HistoryEvent (its stored type name, JSON and Describe).

// workflowStarted opens an instance's history.
type workflowStarted struct {
	Workflow string
	Input    json.RawMessage
	At       time.Time
	// Trace is the instance's trace context, as W3C Trace Context
	// fields (traceparent, tracestate): every wake-up's span is its
	// child (WithTracerProvider). Absent when no span recorded at
	// Start, and in histories older than it: such an instance's
	// wake-ups each begin a trace.
	Trace map[string]string `json:",omitempty"`
}

// nowRecorded is a Context.Now answer.
type nowRecorded struct{ At time.Time }

// idRecorded is a Context.NewID answer.
type idRecorded struct{ ID string }

// stepCompleted records a step's result.
type stepCompleted struct {
	Name     string
	Result   json.RawMessage
	Attempts int
}

// stepAttemptFailed records a failed attempt that will be retried at RetryAt.
type stepAttemptFailed struct {
	Name    string
	Attempt int
	Error   string
	RetryAt time.Time
}

// stepFailed records a step that failed for good: its last error.
type stepFailed struct {
	Name     string
	Error    string
	Attempts int
}

// timerScheduled records a durable delay until Until.
type timerScheduled struct {
	Seq   int
	Until time.Time
}

// timerFired records that the delay Seq was over when replay reached it.
type timerFired struct{ Seq int }

// awaitStarted records an Await for a signal until Until.
type awaitStarted struct {
	Seq    int
	Signal string
	Until  time.Time
}

// signalConsumed records that Await Seq took the signal at Version.
type signalConsumed struct {
	Seq     int
	Version int64
}

// awaitTimedOut records that Await Seq ran out of time.
type awaitTimedOut struct{ Seq int }

// patchMarked records that the instance took the new branch of a patch:
// Patched(ID) was first asked live, past the end of the history (patch.go).
type patchMarked struct{ ID string }

// patchOldBranch notes that the instance had passed a patch's point
// before the patch was deployed, and so takes its old branch: Patched(ID),
// first asked at decision At (counted from 0), met a later decision
// where the marker would be. It is appended by the first execution that
// finds it, wherever that execution is, so it is not a decision: it
// changes no answer, and tells the replayer and inspection which
// instances still need the old branch (patch.go).
type patchOldBranch struct {
	ID string
	At int
}

// compensationCompleted records a compensation that ran.
type compensationCompleted struct{ Name string }

// workflowCompleted closes a history with the function's result.
type workflowCompleted struct{ Output json.RawMessage }

// workflowFailed closes a history with the function's error.
type workflowFailed struct{ Error string }

// workflowCancelled closes the history of a cancelled instance.
type workflowCancelled struct{}

// workflowStuck closes a history whose replay disagreed with it.
type workflowStuck struct{ Error string }

// signalReceived is a signal sent to the instance (inbox, not a decision).
type signalReceived struct {
	Name    string
	Payload json.RawMessage
}

// cancelRequested asks the instance to cancel (inbox, not a decision).
type cancelRequested struct{}

func registry() (*eventstore.Registry, error) {
	r := eventstore.NewRegistry()
	for _, reg := range []error{
		eventstore.Register[workflowStarted](r, "orchestration.Started"),
		eventstore.Register[nowRecorded](r, "orchestration.NowRecorded"),
		eventstore.Register[idRecorded](r, "orchestration.IDRecorded"),
		eventstore.Register[stepCompleted](r, "orchestration.StepCompleted"),
		eventstore.Register[stepAttemptFailed](r, "orchestration.StepAttemptFailed"),
		eventstore.Register[stepFailed](r, "orchestration.StepFailed"),
		eventstore.Register[timerScheduled](r, "orchestration.TimerScheduled"),
		eventstore.Register[timerFired](r, "orchestration.TimerFired"),
		eventstore.Register[awaitStarted](r, "orchestration.AwaitStarted"),
		eventstore.Register[signalConsumed](r, "orchestration.SignalConsumed"),
		eventstore.Register[awaitTimedOut](r, "orchestration.AwaitTimedOut"),
		eventstore.Register[compensationCompleted](r, "orchestration.CompensationCompleted"),
		eventstore.Register[patchMarked](r, "orchestration.PatchMarked"),
		eventstore.Register[patchOldBranch](r, "orchestration.PatchOldBranch"),
		eventstore.Register[workflowCompleted](r, "orchestration.Completed"),
		eventstore.Register[workflowFailed](r, "orchestration.Failed"),
		eventstore.Register[workflowCancelled](r, "orchestration.Cancelled"),
		eventstore.Register[workflowStuck](r, "orchestration.Stuck"),
		eventstore.Register[signalReceived](r, "orchestration.SignalReceived"),
		eventstore.Register[cancelRequested](r, "orchestration.CancelRequested"),
	} {
		if reg != nil {
			return nil, reg
		}
	}
	return r, nil
}

// isDecision reports whether e is produced by the function's own calls.
func isDecision(e any) bool {
	switch e.(type) {
	case workflowStarted, signalReceived, cancelRequested, workflowCompleted, workflowFailed, workflowCancelled, workflowStuck, patchOldBranch:
		return false
	}
	return true
}
