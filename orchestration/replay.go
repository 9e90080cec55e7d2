package orchestration

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/passage-of-time/passage/eventstore"
)

// exportedEvent is one event of an exported history.
type exportedEvent struct {
	Version int64           `json:"version"`
	Type    string          `json:"type"`
	Data    json.RawMessage `json:"data"`
}

// ExportHistory returns an instance's history as JSON, to keep as test
// data: ReplayHistory replays it against new code without a database,
// which is how a deploy is checked against the instances it will meet.
func (e *Engine) ExportHistory(ctx context.Context, instance string) ([]byte, error) {
	history, err := e.store.Load(ctx, streamOf(instance), 0)
	if err != nil {
		return nil, fmt.Errorf("orchestration: export %s: %w", instance, err)
	}
	if len(history) == 0 {
		return nil, fmt.Errorf("orchestration: export %s: %w", instance, ErrUnknownInstance)
	}
	reg, err := registry()
	if err != nil {
		return nil, err
	}
	out := make([]exportedEvent, len(history))
	for i, r := range history {
		name, data, err := reg.Encode(r.Event)
		if err != nil {
			return nil, fmt.Errorf("orchestration: export %s: %w", instance, err)
		}
		out[i] = exportedEvent{Version: r.Version, Type: name, Data: data}
	}
	return json.MarshalIndent(out, "", "  ")
}

// ReplayHistory replays a history exported by ExportHistory against fn,
// running no step and recording nothing, and returns an error wrapping
// ErrNondeterministic, naming both sides, when fn asks for something else
// than the history holds. Keep the histories of long-lived instances as
// test data and replay them in a test of the new code before deploying it.
func ReplayHistory[I, O any](fn func(Context, I) (O, error), exported []byte) error {
	var events []exportedEvent
	if err := json.Unmarshal(exported, &events); err != nil {
		return fmt.Errorf("%w: not an exported history: %v", ErrInvalidArgument, err)
	}
	reg, err := registry()
	if err != nil {
		return err
	}
	history := make([]eventstore.Recorded, len(events))
	for i, ev := range events {
		v, err := reg.Decode(ev.Type, ev.Data)
		if err != nil {
			return fmt.Errorf("%w: event %d: %v", ErrInvalidArgument, i+1, err)
		}
		history[i] = eventstore.Recorded{Version: ev.Version, Type: ev.Type, Event: v}
	}
	wrapped := func(x *execution, input json.RawMessage) (json.RawMessage, error) {
		var in I
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, fmt.Errorf("orchestration: input does not fit %T: %w", in, err)
		}
		out, err := fn(x, in)
		if err != nil {
			return nil, err
		}
		return json.Marshal(out)
	}
	return replay(context.Background(), nil, wrapped, "exported", history)
}

// replay runs fn against history in replay-only mode. Calls past the end
// of the history see a clock at the zero time, so the first delay there
// suspends; steps there do not run.
func replay(ctx context.Context, e *Engine, fn func(*execution, json.RawMessage) (json.RawMessage, error), instance string, history []eventstore.Recorded) error {
	if len(history) == 0 {
		return fmt.Errorf("orchestration: replay %s: %w", instance, ErrUnknownInstance)
	}
	started, ok := history[0].Event.(workflowStarted)
	if !ok {
		return fmt.Errorf("%w: replay %s: the history does not begin with WorkflowStarted", ErrInvalidArgument, instance)
	}
	if e == nil {
		e = &Engine{clock: clockwork.NewFakeClockAt(time.Time{})}
	}
	st := fold(instance, history)
	x := &execution{engine: e, ctx: ctx, instance: instance, stream: streamOf(instance), replayOnly: true}
	x.read(history)
	_, _ = callWorkflow(fn, &loaded{x, nil}, started.Input)
	x.checkOldBranches()
	if x.stuck != nil {
		return fmt.Errorf("orchestration: replay %s: %w", instance, x.stuck)
	}
	if st.State != Running && x.suspended {
		return fmt.Errorf("orchestration: replay %s: %w: the history ended (%s) where the code goes on", instance, ErrNondeterministic, st.State)
	}
	if d, early := x.endedEarly(); early && !x.suspended {
		return fmt.Errorf("orchestration: replay %s: %w: the code ended before %s", instance, ErrNondeterministic, describe(d))
	}
	return nil
}

// Replay replays an instance's recorded history against the function
// registered now, running no step and recording nothing, and returns an
// error wrapping ErrNondeterministic when they disagree: run it on the
// histories of live instances before deploying changed workflow code.
func (e *Engine) Replay(ctx context.Context, instance string) error {
	history, err := e.store.Load(ctx, streamOf(instance), 0)
	if err != nil {
		return fmt.Errorf("orchestration: replay %s: %w", instance, err)
	}
	if len(history) == 0 {
		return fmt.Errorf("orchestration: replay %s: %w", instance, ErrUnknownInstance)
	}
	st := fold(instance, history)
	e.mu.RLock()
	wf, ok := e.workflows[st.Workflow]
	e.mu.RUnlock()
	if !ok {
		return fmt.Errorf("orchestration: replay %s: %w: %q", instance, ErrUnknownWorkflow, st.Workflow)
	}
	return replay(ctx, e, wf.run, instance, history)
}

// describe names a decision for replay-mismatch errors.
func describe(e any) string {
	switch e := e.(type) {
	case nowRecorded:
		return "Now"
	case idRecorded:
		return "NewID"
	case stepCompleted:
		return fmt.Sprintf("Step %q", e.Name)
	case stepAttemptFailed:
		return fmt.Sprintf("Step %q", e.Name)
	case stepFailed:
		return fmt.Sprintf("Step %q", e.Name)
	case timerScheduled, timerFired:
		return "Sleep"
	case awaitStarted:
		return fmt.Sprintf("Await %q", e.Signal)
	case signalConsumed, awaitTimedOut:
		return "Await"
	case compensationCompleted:
		return fmt.Sprintf("compensation %q", e.Name)
	case patchMarked:
		return fmt.Sprintf("the marker of patch %q", e.ID)
	case nil:
		return "the end of the history"
	}
	return fmt.Sprintf("%T", e)
}
