package orchestration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/jmoiron/sqlx"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/passage-of-time/passage/eventstore"
)

// Context is what a workflow function receives. Its answers come from the
// instance's history when they are recorded there, and are recorded when
// they are not, so that every replay of the function sees the same ones.
// A workflow function must get time, ids and side effects only through
// it (and Step, Await, Compensate); the workflowcheck analyzer flags the
// rest. It is not safe for use by several goroutines.
type Context interface {
	// Now returns the time, the same on every replay.
	Now() time.Time
	// NewID returns a new random id, the same on every replay.
	NewID() string
	// Sleep waits d: at once when the time has already passed on a replay
	// catching up, otherwise it returns ErrSuspended and the instance
	// wakes when the delay is over. A workflow returns the error as is.
	Sleep(d time.Duration) error
	// SleepUntil is Sleep until t.
	SleepUntil(t time.Time) error
	// Instance returns the instance's id.
	Instance() string

	execution() *execution
}

// execution replays a workflow function against its instance's history
// and records what the history does not hold yet.
type execution struct {
	engine   *Engine
	wf       *registered // nil for a replay of an exported history
	ctx      context.Context
	instance string
	stream   string
	version  int64 // of the stream, including what was flushed

	history   []eventstore.Recorded
	decisions []any // the function's recorded answers, in order
	next      int   // the first decision not replayed yet
	pending   []any // new answers, appended at the next flush

	seq           int // timers and awaits, in call order
	consumed      map[int64]bool
	cancel        bool // a cancel was requested and not yet acted on
	compensations []compensation

	suspended  bool
	wakeAt     time.Time
	stuck      error // the replay disagreed with the history
	abort      error // storage failed or a concurrent append won: stop, retry later
	replayOnly bool  // Replay: run nothing, record nothing

	// The step being replayed: its first decision, the attempts failed so
	// far and when the next may run.
	stepAt   int
	attempts int
	retryAt  time.Time

	scratch map[reflect.Type]any // see scratch

	// patches holds the answer of Patched (or DeprecatePatch) for each
	// patch id asked so far: one per instance. oldBranches are the
	// history's notes of patches whose old branch it takes (patch.go).
	patches     map[string]bool
	oldBranches []patchOldBranch

	recorded  int  // decisions recorded live in this execution (see position)
	sawCancel bool // a call returned ErrCancelled (cancelNow)
	// overtook is set when the execution recorded its answers after
	// signals or a cancel it has not seen: it must wake again at once.
	overtook bool

	// late holds the lateness (seconds) of the wake-ups the function
	// resumed past, until what it recorded is committed (committed);
	// lateBuf backs the first few. span is the execution's wake-up span,
	// nil when no span records.
	late    []float64
	lateBuf [2]float64
	span    trace.Span
}

// registered is a registered workflow: its function, taking and returning
// JSON, and what its telemetry is named by, made once.
type registered struct {
	name string
	run  func(x *execution, input json.RawMessage) (json.RawMessage, error)
	measured
	// The names of its spans (tracing.go): Start's, a wake-up's, and a
	// step's before the step's name.
	startName, wakeName, stepPrefix string
}

func (x *execution) execution() *execution { return x }

// read loads an instance's history into x: its decisions to replay, what
// its inbox asked and what was taken from it, the old branches of
// patches it noted, and its version.
func (x *execution) read(history []eventstore.Recorded) {
	x.history = history
	x.consumed = map[int64]bool{}
	for _, r := range history {
		switch ev := r.Event.(type) {
		case cancelRequested:
			x.cancel = true
		case signalConsumed:
			x.consumed[ev.Version] = true
		case patchOldBranch:
			x.oldBranches = append(x.oldBranches, ev)
		}
		if isDecision(r.Event) {
			x.decisions = append(x.decisions, r.Event)
		}
		x.version = r.Version
	}
}

func (x *execution) Instance() string { return x.instance }

// stopped reports whether the function must unwind: it is suspended,
// stuck or aborted.
func (x *execution) stopped() bool { return x.suspended || x.stuck != nil || x.abort != nil }

// peek returns the next recorded decision, or nil when replay has caught
// up with the history.
func (x *execution) peek() any {
	if x.next < len(x.decisions) {
		return x.decisions[x.next]
	}
	return nil
}

// live reports whether the replay has caught up: what comes now is new.
func (x *execution) live() bool { return x.next >= len(x.decisions) }

// mismatch records that the function asked for want where the history
// holds something else; the instance is stuck.
func (x *execution) mismatch(want string) {
	if x.stuck != nil {
		return
	}
	found := fmt.Sprintf("the code asks for %s where the history (event %d of its decisions) has %s", want, x.next+1, describe(x.peek()))
	if id, ok := x.passedOldBranch(); ok {
		// The cause, when the history says so: the code of a path the
		// instance took is gone.
		x.stuck = x.oldBranchGone(id, found)
		return
	}
	if m, ok := x.peek().(patchMarked); ok {
		found += fmt.Sprintf(": the instance took the new branch of patch %q here, so the code must ask Patched(ctx, %q) or DeprecatePatch(ctx, %q) here as long as a running instance holds its marker", m.ID, m.ID, m.ID)
	}
	x.stuck = fmt.Errorf("%w: %s", ErrNondeterministic, found)
}

// endedEarly returns the first decision the function did not replay
// before it returned, and true, when there is one other than a
// compensation (those run after the function returns): the code ended
// where the history goes on.
func (x *execution) endedEarly() (any, bool) {
	for _, d := range x.decisions[min(x.next, len(x.decisions)):] {
		if _, ok := d.(compensationCompleted); !ok {
			return d, true
		}
	}
	return nil, false
}

func (x *execution) record(e any) {
	if isDecision(e) {
		x.recorded++
	}
	if !x.replayOnly {
		x.pending = append(x.pending, e)
	}
}

// position is the place of the next decision among all of the
// instance's decisions: those replayed and those recorded in this
// execution. It is the same for a call on every replay, which is what an
// idempotency key needs.
func (x *execution) position() int { return x.next + x.recorded }

// cancelNow notes that a call gave way to the requested cancel, so that
// the instance ends Cancelled even if the function swallows the error.
func (x *execution) cancelNow() error {
	x.sawCancel = true
	return ErrCancelled
}

// cancelledHere reports whether a blocking call must give way to a
// requested cancel: the history holds nothing more for it — nothing at
// all, or the compensations that ran when a first execution was cancelled
// at this very call.
func (x *execution) cancelledHere() bool {
	if !x.cancel {
		return false
	}
	switch x.peek().(type) {
	case nil, compensationCompleted:
		return true
	}
	return false
}

// flush appends the pending answers with the stream's expected version.
func (x *execution) flush() {
	if len(x.pending) == 0 || x.replayOnly || x.abort != nil {
		return
	}
	if f := x.engine.fault; f != nil {
		if err := f(x.pending); err != nil {
			x.abort = err
			return
		}
	}
	res, err := x.engine.store.Append(x.ctx, x.stream, eventstore.Exact(x.version), x.pending...)
	if errors.Is(err, eventstore.ErrWrongExpectedVersion) {
		// A signal that landed while a step ran moved the stream on; the
		// step's result is recorded after it all the same.
		res.Version, err = x.appendPastInbox()
	}
	if err != nil && !errors.Is(err, eventstore.ErrPublish) {
		x.abort = fmt.Errorf("orchestration: record %d events of %s: %w", len(x.pending), x.instance, err)
		return
	}
	x.version = res.Version
	x.committed(x.ctx, x.pending)
	x.pending = x.pending[:0]
}

// appendPastInbox appends the pending answers after what the inbox
// appended since x.version (see Engine.appendPastInbox) and returns the
// stream's new version, or the conflict when something else was.
func (x *execution) appendPastInbox() (int64, error) {
	var version int64
	err := x.engine.inTx(x.ctx, func(tx *sqlx.Tx) error {
		versions := []int64{x.version}
		outcomes, overtook, err := x.engine.appendPastInbox(x.ctx, tx, []eventstore.StreamAppend{{Stream: x.stream, Expected: eventstore.Exact(x.version), Events: x.pending}}, versions)
		if err != nil {
			return err
		}
		if err := outcomes[0].Err(); err != nil {
			return err
		}
		x.overtook = x.overtook || overtook[0]
		version = outcomes[0].Result.Version
		return nil
	})
	return version, err
}

// mustFlushBeforeSideEffect reports whether something pending must be
// recorded before a step's side effect runs: anything but timers found
// over.
func (x *execution) mustFlushBeforeSideEffect() bool {
	for _, e := range x.pending {
		if _, ok := e.(timerFired); !ok {
			return true
		}
	}
	return false
}

// scratch returns the execution's reusable value of type T, so decoding a
// recorded result does not allocate one each time.
func scratch[T any](x *execution) *T {
	key := reflect.TypeFor[T]()
	if p, ok := x.scratch[key].(*T); ok {
		return p
	}
	p := new(T)
	if x.scratch == nil {
		x.scratch = map[reflect.Type]any{}
	}
	x.scratch[key] = p
	return p
}

// committed records what events of x, now committed, tell: the end of the
// instance if one of them is it, and the lateness of the wake-ups they
// resumed past (x.late). It is called after each commit of x's events
// and never before, so a write that is lost counts nothing.
func (x *execution) committed(ctx context.Context, events []any) {
	wf, ins := x.wf, &x.engine.ins
	if wf != nil && ins.started != nil {
		for _, ev := range events {
			var c metric.Int64Counter
			switch ev.(type) {
			case workflowCompleted:
				c = ins.completed
			case workflowFailed:
				c = ins.failed
			case workflowCancelled:
				c = ins.cancelled
			case workflowStuck:
				c = ins.stuck
			default:
				continue
			}
			c.Add(ctx, 1, wf.measured.add...)
		}
		for _, s := range x.late {
			ins.lateness.Record(ctx, s, wf.measured.record...)
		}
	}
	x.late = x.late[:0]
}

// resumed notes that the function resumes past a delay that was over at
// due, a wake-up, for committed to record with what the execution
// records. The first few fit in the execution: noting costs no
// allocation.
func (x *execution) resumed(due time.Time) {
	if x.replayOnly {
		return
	}
	if x.late == nil {
		x.late = x.lateBuf[:0]
	}
	x.late = append(x.late, x.now().Sub(due).Seconds())
}

// compensation is one registered undo, run by name when the instance
// fails or is cancelled.
type compensation struct {
	name string
	fn   func(context.Context) error
}
