package orchestration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"time"

	"github.com/jmoiron/sqlx"

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

	recorded  int  // decisions recorded live in this execution (see position)
	sawCancel bool // a call returned ErrCancelled (cancelNow)
	// overtook is set when the execution recorded its answers after
	// signals or a cancel it has not seen: it must wake again at once.
	overtook bool
}

type compensation struct {
	name string
	fn   func(context.Context) error
}

func (x *execution) execution() *execution { return x }

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
	if x.stuck == nil {
		x.stuck = fmt.Errorf("%w: the code asks for %s where the history (event %d of its decisions) has %s",
			ErrNondeterministic, want, x.next+1, describe(x.peek()))
	}
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
	case nil, CompensationCompleted:
		return true
	}
	return false
}

func (x *execution) now() time.Time { return x.engine.clock.Now() }

func (x *execution) Now() time.Time {
	if x.stopped() {
		return time.Time{} // unwinding: nothing more is recorded
	}
	if e, ok := x.peek().(NowRecorded); ok {
		x.next++
		return e.At
	}
	if !x.live() {
		x.mismatch("Now")
		return time.Time{}
	}
	at := x.now()
	x.record(NowRecorded{At: at})
	return at
}

func (x *execution) NewID() string {
	if x.stopped() {
		return ""
	}
	if e, ok := x.peek().(IDRecorded); ok {
		x.next++
		return e.ID
	}
	if !x.live() {
		x.mismatch("NewID")
		return ""
	}
	id := newID()
	x.record(IDRecorded{ID: id})
	return id
}

func (x *execution) Sleep(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%w: Sleep(%v): negative duration", ErrInvalidArgument, d)
	}
	return x.sleep(func() time.Time { return x.now().Add(d) })
}

func (x *execution) SleepUntil(t time.Time) error {
	return x.sleep(func() time.Time { return t })
}

// sleep is a durable delay: TimerScheduled records when it ends, and
// TimerFired that replay found it over, so later replays go on at once
// without asking the clock.
func (x *execution) sleep(until func() time.Time) error {
	if x.stopped() {
		return ErrSuspended
	}
	seq := x.seq
	x.seq++
	if x.cancelledHere() {
		return x.cancelNow()
	}
	var end time.Time
	switch e := x.peek().(type) {
	case TimerScheduled:
		x.next++
		end = e.Until
	case nil:
		if x.cancel {
			return x.cancelNow()
		}
		end = until()
		x.record(TimerScheduled{Seq: seq, Until: end})
	default:
		x.mismatch("Sleep")
		return ErrSuspended
	}
	switch e := x.peek().(type) {
	case TimerFired:
		if e.Seq != seq {
			x.mismatch("Sleep")
			return ErrSuspended
		}
		x.next++
		return nil
	case nil:
	default:
		if x.cancelledHere() {
			return x.cancelNow()
		}
		x.mismatch("the end of Sleep")
		return ErrSuspended
	}
	if x.cancel {
		return x.cancelNow()
	}
	if !x.now().Before(end) {
		// Already over (a replay catching up): go on now, no round trip.
		x.record(TimerFired{Seq: seq})
		return nil
	}
	x.suspend(end)
	return ErrSuspended
}

func (x *execution) suspend(until time.Time) {
	x.suspended = true
	x.wakeAt = until
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
		if _, ok := e.(TimerFired); !ok {
			return true
		}
	}
	return false
}

// newID returns a random 128-bit id in hex.
func newID() string {
	return fmt.Sprintf("%016x%016x", rand.Uint64(), rand.Uint64())
}

// StepInfo is what a step's function learns about its call.
type StepInfo struct {
	// Instance and Name identify the step.
	Instance, Name string
	// Attempt counts from 1.
	Attempt int
	// Key is the idempotency key: the instance and the step's place in
	// the workflow, the same for every attempt, so that the side effect's
	// receiver can deduplicate (a payment provider's Idempotency-Key).
	Key string
}

// RetryPolicy says how a failing step is retried: up to MaxAttempts
// attempts in all, waiting Initial, then doubling up to Max, each wait
// jittered by up to a fifth. Waits are durable delays. A zero Initial or
// a Max below Initial takes DefaultRetry's.
type RetryPolicy struct {
	MaxAttempts  int
	Initial, Max time.Duration
}

// DefaultRetry is the policy of steps without WithRetry.
var DefaultRetry = RetryPolicy{MaxAttempts: 5, Initial: time.Second, Max: time.Minute}

// StepOption configures a Step.
type StepOption func(*RetryPolicy)

// WithRetry sets a step's retry policy; MaxAttempts 1 means no retry.
func WithRetry(p RetryPolicy) StepOption { return func(r *RetryPolicy) { *r = p } }

func (p RetryPolicy) wait(attempt int) time.Duration {
	// Zero fields mean the default's: a wait of zero would retry at once,
	// forever.
	if p.Initial <= 0 {
		p.Initial = DefaultRetry.Initial
	}
	if p.Max < p.Initial {
		p.Max = max(DefaultRetry.Max, p.Initial)
	}
	d := p.Initial
	for i := 1; i < attempt && d < p.Max; i++ {
		d *= 2
	}
	d = min(d, p.Max)
	if d > 0 {
		d += time.Duration(rand.Int64N(int64(d)/5 + 1))
	}
	return d
}

// StepError is a step's recorded failure, returned on every replay.
type StepError struct {
	Step     string
	Message  string
	Attempts int
}

func (e *StepError) Error() string {
	return fmt.Sprintf("step %q failed after %d attempts: %s", e.Step, e.Attempts, e.Message)
}

// Step runs a side effect at least once and records its result, which
// every replay returns without running fn again. A failing fn is retried
// by the step's policy (DefaultRetry), each wait a durable delay; an error
// marked NonRetryable, or the last allowed attempt's, fails the step: its
// *StepError is recorded and returned. fn gets the StepInfo with the
// idempotency key its receiver can deduplicate by. The result must
// marshal to JSON.
//
// Replaying a recorded step costs one allocation (encoding/json's); the
// key and the call are only built when the step runs.
func Step[T any](ctx Context, name string, fn func(context.Context, StepInfo) (T, error), opts ...StepOption) (T, error) {
	var zero T
	x := ctx.execution()
	if x.stopped() {
		return zero, ErrSuspended
	}
	raw, replayed, err := x.replayStep(name)
	if !replayed && err == nil {
		raw, err = x.runStep(name, func(c context.Context, info StepInfo) (json.RawMessage, error) {
			v, err := fn(c, info)
			if err != nil {
				return nil, err
			}
			b, err := json.Marshal(v)
			if err != nil {
				return nil, NonRetryable(fmt.Errorf("orchestration: step %q: its result does not marshal to JSON: %w", name, err))
			}
			return b, nil
		}, opts)
	}
	if err != nil {
		return zero, err
	}
	p := scratch[T](x)
	*p = zero // Unmarshal merges into what is there
	if err := json.Unmarshal(raw, p); err != nil {
		x.stuck = fmt.Errorf("%w: step %q's recorded result does not fit %T: %v", ErrNondeterministic, name, zero, err)
		return zero, ErrSuspended
	}
	return *p, nil
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

// replayStep returns the step's recorded outcome: its result or its
// failure (replayed true), or, when the history holds none yet, the
// attempts already failed and when the next may run (in x.attempts and
// x.retryAt).
func (x *execution) replayStep(name string) (json.RawMessage, bool, error) {
	x.attempts, x.retryAt, x.stepAt = 0, time.Time{}, x.position()
	for {
		switch e := x.peek().(type) {
		case StepAttemptFailed:
			if e.Name != name {
				x.mismatch(fmt.Sprintf("Step %q", name))
				return nil, false, ErrSuspended
			}
			x.next++
			x.attempts, x.retryAt = e.Attempt, e.RetryAt
			continue
		case StepCompleted:
			if e.Name != name {
				x.mismatch(fmt.Sprintf("Step %q", name))
				return nil, false, ErrSuspended
			}
			x.next++
			return e.Result, true, nil
		case StepFailed:
			if e.Name != name {
				x.mismatch(fmt.Sprintf("Step %q", name))
				return nil, false, ErrSuspended
			}
			x.next++
			return nil, true, &StepError{Step: e.Name, Message: e.Error, Attempts: e.Attempts}
		case nil:
			return nil, false, nil
		default:
			if x.cancelledHere() {
				return nil, false, x.cancelNow()
			}
			x.mismatch(fmt.Sprintf("Step %q", name))
			return nil, false, ErrSuspended
		}
	}
}

// runStep runs a step the history does not hold, after replayStep.
func (x *execution) runStep(name string, fn func(context.Context, StepInfo) (json.RawMessage, error), opts []StepOption) (json.RawMessage, error) {
	if x.cancel {
		return nil, x.cancelNow()
	}
	if x.replayOnly {
		x.suspend(time.Time{}) // a replay check runs no step
		return nil, ErrSuspended
	}
	if x.attempts > 0 && x.now().Before(x.retryAt) {
		x.suspend(x.retryAt)
		return nil, ErrSuspended
	}
	policy := DefaultRetry
	for _, o := range opts {
		o(&policy)
	}
	attempts := x.attempts + 1
	// What the side effect may depend on is recorded before it runs: an
	// earlier step's result (so it never runs again), a Now, an id, an
	// await's outcome. A timer that was over is not: replay finds it over
	// again. So a step right after a wake-up costs no extra round trip.
	if x.mustFlushBeforeSideEffect() {
		x.flush()
		if x.abort != nil {
			return nil, ErrSuspended
		}
	}
	key := fmt.Sprintf("%s/%d/%s", x.instance, x.stepAt, name)
	result, err := callStep(x.ctx, fn, StepInfo{Instance: x.instance, Name: name, Attempt: attempts, Key: key})
	switch {
	case err == nil:
		// Recorded with the next append: before the next side effect, or
		// with the suspension or the end, whichever comes first.
		x.record(StepCompleted{Name: name, Result: result, Attempts: attempts})
		return result, nil
	case IsNonRetryable(err) || attempts >= max(policy.MaxAttempts, 1):
		x.record(StepFailed{Name: name, Error: err.Error(), Attempts: attempts})
		return nil, &StepError{Step: name, Message: err.Error(), Attempts: attempts}
	}
	at := x.now().Add(policy.wait(attempts))
	x.record(StepAttemptFailed{Name: name, Attempt: attempts, Error: err.Error(), RetryAt: at})
	x.suspend(at)
	return nil, ErrSuspended
}

// callStep turns a panic in a step into an error, retried like any other.
func callStep(ctx context.Context, fn func(context.Context, StepInfo) (json.RawMessage, error), info StepInfo) (res json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("orchestration: step %q panicked: %v", info.Name, p)
		}
	}()
	return fn(ctx, info)
}

// Await waits for the signal named signal (Engine.Signal) for at most
// timeout: it returns the payload and true when a signal came (the oldest
// one not taken by an earlier Await), or the zero T and false when the
// time ran out. While it waits the instance sleeps; a signal wakes it.
func Await[T any](ctx Context, signal string, timeout time.Duration) (T, bool, error) {
	var zero T
	x := ctx.execution()
	raw, ok, err := x.await(signal, timeout)
	if err != nil || !ok {
		return zero, false, err
	}
	var v T
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &v); err != nil {
			return zero, false, fmt.Errorf("orchestration: signal %q: payload does not fit %T: %w", signal, zero, err)
		}
	}
	return v, true, nil
}

func (x *execution) await(signal string, timeout time.Duration) (json.RawMessage, bool, error) {
	if x.stopped() {
		return nil, false, ErrSuspended
	}
	if timeout < 0 {
		return nil, false, fmt.Errorf("%w: Await(%q, %v): negative timeout", ErrInvalidArgument, signal, timeout)
	}
	seq := x.seq
	x.seq++
	if x.cancelledHere() {
		return nil, false, x.cancelNow()
	}
	var until time.Time
	switch e := x.peek().(type) {
	case AwaitStarted:
		if e.Signal != signal || e.Seq != seq {
			x.mismatch(fmt.Sprintf("Await %q", signal))
			return nil, false, ErrSuspended
		}
		x.next++
		until = e.Until
	case nil:
		if x.cancel {
			return nil, false, x.cancelNow()
		}
		until = x.now().Add(timeout)
		x.record(AwaitStarted{Seq: seq, Signal: signal, Until: until})
	default:
		x.mismatch(fmt.Sprintf("Await %q", signal))
		return nil, false, ErrSuspended
	}
	switch e := x.peek().(type) {
	case SignalConsumed:
		x.next++
		return x.payload(e.Version), true, nil
	case AwaitTimedOut:
		x.next++
		return nil, false, nil
	case nil:
	default:
		if x.cancelledHere() {
			return nil, false, x.cancelNow()
		}
		x.mismatch(fmt.Sprintf("the end of Await %q", signal))
		return nil, false, ErrSuspended
	}
	if x.cancel {
		return nil, false, x.cancelNow()
	}
	for _, r := range x.history {
		if s, ok := r.Event.(SignalReceived); ok && s.Name == signal && !x.consumed[r.Version] {
			x.consumed[r.Version] = true
			x.record(SignalConsumed{Seq: seq, Version: r.Version})
			return s.Payload, true, nil
		}
	}
	if !x.now().Before(until) {
		x.record(AwaitTimedOut{Seq: seq})
		return nil, false, nil
	}
	x.suspend(until)
	return nil, false, ErrSuspended
}

func (x *execution) payload(version int64) json.RawMessage {
	for _, r := range x.history {
		if r.Version == version {
			if s, ok := r.Event.(SignalReceived); ok {
				return s.Payload
			}
		}
	}
	return nil
}

// Compensate registers fn to undo what the workflow did so far: if the
// function fails or is cancelled, the compensations run in reverse order
// of registration (a saga), each at least once and recorded.
func Compensate(ctx Context, name string, fn func(context.Context) error) {
	x := ctx.execution()
	x.compensations = append(x.compensations, compensation{name, fn})
}
