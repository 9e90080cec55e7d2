package orchestration

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/passage-of-time/passage/eventstore"
)

// The history of an instance is one event stream, "workflow/<id>". The
// events the function's calls produce ("decisions") are replayed in
// order; signals and cancel requests come from outside and are read as
// an inbox.

// WorkflowStarted opens an instance's history.
type WorkflowStarted struct {
	Workflow string
	Input    json.RawMessage
	At       time.Time
}

// NowRecorded is a Context.Now answer.
type NowRecorded struct{ At time.Time }

// IDRecorded is a Context.NewID answer.
type IDRecorded struct{ ID string }

// StepCompleted records a step's result.
type StepCompleted struct {
	Name     string
	Result   json.RawMessage
	Attempts int
}

// StepAttemptFailed records a failed attempt that will be retried at RetryAt.
type StepAttemptFailed struct {
	Name    string
	Attempt int
	Error   string
	RetryAt time.Time
}

// StepFailed records a step that failed for good: its last error.
type StepFailed struct {
	Name     string
	Error    string
	Attempts int
}

// TimerScheduled records a durable delay until Until.
type TimerScheduled struct {
	Seq   int
	Until time.Time
}

// TimerFired records that the delay Seq was over when replay reached it.
type TimerFired struct{ Seq int }

// AwaitStarted records an Await for a signal until Until.
type AwaitStarted struct {
	Seq    int
	Signal string
	Until  time.Time
}

// SignalConsumed records that Await Seq took the signal at Version.
type SignalConsumed struct {
	Seq     int
	Version int64
}

// AwaitTimedOut records that Await Seq ran out of time.
type AwaitTimedOut struct{ Seq int }

// CompensationCompleted records a compensation that ran.
type CompensationCompleted struct{ Name string }

// WorkflowCompleted closes a history with the function's result.
type WorkflowCompleted struct{ Output json.RawMessage }

// WorkflowFailed closes a history with the function's error.
type WorkflowFailed struct{ Error string }

// WorkflowCancelled closes the history of a cancelled instance.
type WorkflowCancelled struct{}

// WorkflowStuck closes a history whose replay disagreed with it.
type WorkflowStuck struct{ Error string }

// SignalReceived is a signal sent to the instance (inbox, not a decision).
type SignalReceived struct {
	Name    string
	Payload json.RawMessage
}

// CancelRequested asks the instance to cancel (inbox, not a decision).
type CancelRequested struct{}

func registry() (*eventstore.Registry, error) {
	r := eventstore.NewRegistry()
	for _, reg := range []error{
		eventstore.Register[WorkflowStarted](r, "orchestration.Started"),
		eventstore.Register[NowRecorded](r, "orchestration.NowRecorded"),
		eventstore.Register[IDRecorded](r, "orchestration.IDRecorded"),
		eventstore.Register[StepCompleted](r, "orchestration.StepCompleted"),
		eventstore.Register[StepAttemptFailed](r, "orchestration.StepAttemptFailed"),
		eventstore.Register[StepFailed](r, "orchestration.StepFailed"),
		eventstore.Register[TimerScheduled](r, "orchestration.TimerScheduled"),
		eventstore.Register[TimerFired](r, "orchestration.TimerFired"),
		eventstore.Register[AwaitStarted](r, "orchestration.AwaitStarted"),
		eventstore.Register[SignalConsumed](r, "orchestration.SignalConsumed"),
		eventstore.Register[AwaitTimedOut](r, "orchestration.AwaitTimedOut"),
		eventstore.Register[CompensationCompleted](r, "orchestration.CompensationCompleted"),
		eventstore.Register[WorkflowCompleted](r, "orchestration.Completed"),
		eventstore.Register[WorkflowFailed](r, "orchestration.Failed"),
		eventstore.Register[WorkflowCancelled](r, "orchestration.Cancelled"),
		eventstore.Register[WorkflowStuck](r, "orchestration.Stuck"),
		eventstore.Register[SignalReceived](r, "orchestration.SignalReceived"),
		eventstore.Register[CancelRequested](r, "orchestration.CancelRequested"),
	} {
		if reg != nil {
			return nil, reg
		}
	}
	return r, nil
}

// describe names a decision for replay-mismatch errors.
func describe(e any) string {
	switch e := e.(type) {
	case NowRecorded:
		return "Now"
	case IDRecorded:
		return "NewID"
	case StepCompleted:
		return fmt.Sprintf("Step %q", e.Name)
	case StepAttemptFailed:
		return fmt.Sprintf("Step %q", e.Name)
	case StepFailed:
		return fmt.Sprintf("Step %q", e.Name)
	case TimerScheduled, TimerFired:
		return "Sleep"
	case AwaitStarted:
		return fmt.Sprintf("Await %q", e.Signal)
	case SignalConsumed, AwaitTimedOut:
		return "Await"
	case CompensationCompleted:
		return fmt.Sprintf("compensation %q", e.Name)
	case nil:
		return "the end of the history"
	}
	return fmt.Sprintf("%T", e)
}

// isDecision reports whether e is produced by the function's own calls.
func isDecision(e any) bool {
	switch e.(type) {
	case WorkflowStarted, SignalReceived, CancelRequested, WorkflowCompleted, WorkflowFailed, WorkflowCancelled, WorkflowStuck:
		return false
	}
	return true
}
