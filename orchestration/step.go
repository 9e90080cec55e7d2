package orchestration

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	ptel "github.com/passage-of-time/passage/internal/telemetry"
)

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

// StepError is a step's recorded failure, returned on every replay.
type StepError struct {
	Step     string
	Message  string
	Attempts int
}

func (e *StepError) Error() string {
	return fmt.Sprintf("step %q failed after %d attempts: %s", e.Step, e.Attempts, e.Message)
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

// replayStep returns the step's recorded outcome: its result or its
// failure (replayed true), or, when the history holds none yet, the
// attempts already failed and when the next may run (in x.attempts and
// x.retryAt).
func (x *execution) replayStep(name string) (json.RawMessage, bool, error) {
	x.attempts, x.retryAt, x.stepAt = 0, time.Time{}, x.position()
	for {
		switch e := x.peek().(type) {
		case stepAttemptFailed:
			if e.Name != name {
				x.mismatch(fmt.Sprintf("Step %q", name))
				return nil, false, ErrSuspended
			}
			x.next++
			x.attempts, x.retryAt = e.Attempt, e.RetryAt
			continue
		case stepCompleted:
			if e.Name != name {
				x.mismatch(fmt.Sprintf("Step %q", name))
				return nil, false, ErrSuspended
			}
			x.next++
			return e.Result, true, nil
		case stepFailed:
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
	if x.checkOldBranches(); x.stuck != nil {
		return nil, ErrSuspended // nothing runs on a path the instance never took
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
	if x.attempts > 0 {
		// A retry, woken when its wait was over; noted after the flush
		// above, so it is committed with this attempt's outcome.
		x.resumed(x.retryAt)
	}
	info := StepInfo{Instance: x.instance, Name: name, Attempt: attempts, Key: fmt.Sprintf("%s/%d/%s", x.instance, x.stepAt, name)}
	ctx, span := x.engine.tr.startStep(x.ctx, x.wf, info, x.now())
	result, err := callStep(ctx, fn, info)
	endStep(span, err, x.now())
	switch {
	case err == nil:
		// Recorded with the next append: before the next side effect, or
		// with the suspension or the end, whichever comes first.
		x.record(stepCompleted{Name: name, Result: result, Attempts: attempts})
		return result, nil
	case IsNonRetryable(err) || attempts >= max(policy.MaxAttempts, 1):
		x.record(stepFailed{Name: name, Error: err.Error(), Attempts: attempts})
		return nil, &StepError{Step: name, Message: err.Error(), Attempts: attempts}
	}
	at := x.now().Add(policy.wait(attempts))
	x.record(stepAttemptFailed{Name: name, Attempt: attempts, Error: err.Error(), RetryAt: at})
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

// startStep starts the span of an attempt of a step at start, a child of
// the span of ctx (the wake-up's), if spans may record: it returns ctx
// with the span, or ctx and nil.
func (tr *tracing) startStep(ctx context.Context, wf *registered, info StepInfo, start time.Time) (context.Context, trace.Span) {
	if !tr.On() || wf == nil {
		return ctx, nil
	}
	return tr.Tracer().Start(ctx, wf.stepPrefix+info.Name, trace.WithTimestamp(start), trace.WithAttributes(
		attribute.String(attrWorkflow, wf.name),
		attribute.String(attrInstance, info.Instance),
		attribute.String(attrStep, info.Name),
		attribute.Int(attrAttempt, info.Attempt),
		attribute.String(attrKey, info.Key)))
}

// endStep ends the span of a step's attempt that returned err at end.
func endStep(span trace.Span, err error, end time.Time) {
	ptel.End(span, err, end)
}
