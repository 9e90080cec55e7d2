package orchestration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/passage-of-time/passage/eventstore"
	"github.com/passage-of-time/passage/internal/names"
	"github.com/passage-of-time/passage/todolist"
)

// listName is the to-do list holding each suspended instance's wake-up.
const listName = "passage-workflows"

// Engine runs durable workflows: it starts instances, keeps each one's
// history as an event stream, and wakes suspended instances through a
// to-do list whose processor (Engine.Processor) replays them when due.
type Engine struct {
	db    *sqlx.DB
	store *eventstore.Store
	list  *todolist.List
	clock clockwork.Clock

	mu        sync.RWMutex
	workflows map[string]*registered

	// meters and tracers are the OpenTelemetry providers (telemetry.go,
	// tracing.go; the global ones unless an option set them); ins are the
	// instruments made with meters, tr the spans' tracer.
	meters  metric.MeterProvider
	tracers trace.TracerProvider
	ins     instruments
	tr      tracing

	// fault, when set (tests), is asked before each append of an
	// execution, with the events about to be appended; an error stands
	// for a crash at that point.
	fault func(events []any) error
}

// Option configures an Engine.
type Option func(*Engine) error

// WithClock sets the engine's clock (the default is the real one).
func WithClock(c clockwork.Clock) Option {
	return func(e *Engine) error {
		if c == nil {
			return fmt.Errorf("%w: WithClock: nil clock", ErrInvalidArgument)
		}
		e.clock = c
		return nil
	}
}

// WithMeterProvider sets the OpenTelemetry meter provider the engine
// records its metrics with (default: the global one,
// otel.GetMeterProvider(), read by New — a global SDK installed later is
// used as well, as the API's global delegates). The engine's to-do list
// of wake-ups records the todolist's metrics with it too (list
// "passage-workflows"). The instruments, each with the attribute
// workflow=<name>:
//
//   - passage.workflow.started (counter, {instance}): instances this
//     process started (Start of an id that exists already starts none);
//   - passage.workflow.completed, .failed, .cancelled and .stuck
//     (counters, {instance}): instances whose end this process recorded —
//     completed, failed (after their compensations), cancelled, or stuck
//     (a replay that disagreed with the history);
//   - passage.workflow.wakeup.lateness (histogram, s): from the instant a
//     delay an instance slept on was over — a Sleep's end, an Await's
//     timeout, a failed step's retry time — to the moment the function
//     resumed past it (the step after it starts then), by the engine's
//     clock, once per wake-up. A delay already over when the function
//     first reaches it is no wake-up, and not measured.
//
// Everything is counted when it is committed, never when it is decided:
// an execution that crashed, or lost its write to another one (an
// optimistic-concurrency conflict), counts nothing, and the execution
// that replays the instance after it counts what it records. So each
// transition counts once however often the instance was replayed. The
// counters count what this process did. With the API's no-op provider,
// or the global one while no SDK is installed, recording costs no
// allocation.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(e *Engine) error {
		if mp == nil {
			return fmt.Errorf("%w: WithMeterProvider: nil meter provider", ErrInvalidArgument)
		}
		e.meters = mp
		return nil
	}
}

// WithTracerProvider sets the OpenTelemetry tracer provider the engine
// traces its instances with (default: the global one,
// otel.GetTracerProvider(), read by New; an SDK installed as the global
// provider later is used as well). The engine's to-do list of wake-ups
// traces its batches with it too.
//
// An instance is one trace, however long it sleeps. Start begins it with
// a span "workflow.start <workflow>" (a new trace, linked to the span of
// Start's ctx if it has one) and records that span's context in the
// history's first event, as a W3C traceparent. Every execution of the
// instance afterwards — each wake-up, days later, in any process — is a
// span "workflow.wakeup <workflow>", a child of that recorded context,
// linked to the span of the processor's ctx: the to-do list's batch span,
// itself linked to the tick's span when the tick's handler carries one
// (the list traces with the engine's provider, so a wake-up traced is in
// a batch traced). A wake-up span holds the workflow, the instance, the
// wake-up's due time and lateness, and how the execution ended
// (suspended and until when, completed, failed, cancelled, stuck), with
// status Error for a failure, a stuck instance or a write that failed; a
// write lost to another execution is marked conflict. Each step the execution runs
// (not those replayed from the history) is a span
// "workflow.step <workflow>/<step>", a child of the wake-up's, with the
// step's attempt and idempotency key and status Error when the attempt
// failed; the step's ctx carries it, so what the step traces is its
// child. Spans are stamped with the engine's clock.
//
// An instance started while no span could record (no SDK), or whose
// history predates this, has no recorded context: each of its wake-ups
// begins a trace of its own. With the API's no-op provider, or the
// global one while no SDK is installed, no span is started, nothing is
// recorded in the history, and an execution costs no allocation more.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(e *Engine) error {
		if tp == nil {
			return fmt.Errorf("%w: WithTracerProvider: nil tracer provider", ErrInvalidArgument)
		}
		e.tracers = tp
		return nil
	}
}

// New returns an engine on db, creating the event store's and the to-do
// list's tables on first use.
func New(ctx context.Context, db *sqlx.DB, opts ...Option) (*Engine, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: nil db", ErrInvalidArgument)
	}
	e := &Engine{db: db, clock: clockwork.NewRealClock(), workflows: map[string]*registered{}}
	for _, o := range opts {
		if err := o(e); err != nil {
			return nil, err
		}
	}
	if e.meters == nil {
		e.meters = otel.GetMeterProvider()
	}
	if e.tracers == nil {
		e.tracers = otel.GetTracerProvider()
	}
	e.ins = newInstruments(e.meters)
	e.tr = newTracing(e.tracers)
	reg, err := registry()
	if err != nil {
		return nil, fmt.Errorf("orchestration: %w", err)
	}
	if e.store, err = eventstore.Open(ctx, db, reg, eventstore.WithClock(e.clock)); err != nil {
		return nil, fmt.Errorf("orchestration: %w", err)
	}
	if e.list, err = todolist.Open(ctx, db, listName, todolist.WithListClock(e.clock),
		todolist.WithMeterProvider(e.meters), todolist.WithTracerProvider(e.tracers)); err != nil {
		return nil, fmt.Errorf("orchestration: %w", err)
	}
	return e, nil
}

// Register makes fn the workflow called name. Its input and output are
// JSON on the way to and from the history.
func Register[I, O any](e *Engine, name string, fn func(Context, I) (O, error)) error {
	if name == "" || fn == nil {
		return fmt.Errorf("%w: Register needs a name and a function", ErrInvalidArgument)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, dup := e.workflows[name]; dup {
		return fmt.Errorf("%w: workflow %q is registered twice", ErrInvalidArgument, name)
	}
	e.workflows[name] = &registered{
		name: name,
		run: func(x *execution, input json.RawMessage) (json.RawMessage, error) {
			var in I
			if err := json.Unmarshal(input, &in); err != nil {
				return nil, fmt.Errorf("orchestration: workflow %q: input does not fit %T: %w", name, in, err)
			}
			out, err := fn(x, in)
			if err != nil {
				return nil, err
			}
			return json.Marshal(out)
		},
		measured:   newMeasured(name),
		startName:  "workflow.start " + name,
		wakeName:   "workflow.wakeup " + name,
		stepPrefix: "workflow.step " + name + "/",
	}
	return nil
}

func streamOf(instance string) string { return "workflow/" + instance }

func checkID(instance string) error {
	if instance == "" || len(instance) > 200 {
		return fmt.Errorf("%w: instance id %q must be 1 to 200 bytes", ErrInvalidArgument, instance)
	}
	return nil
}

// checkNewID checks the id of an instance to start: checkID, and the rules
// of every name passage stores (internal/names: UTF-8 without control
// characters, neither "." nor "..", which the dashboard could not link
// to). Instances started before these rules are still found by checkID.
func checkNewID(instance string) error {
	if err := checkID(instance); err != nil {
		return err
	}
	if err := names.Check(instance, 200); err != nil {
		return fmt.Errorf("%w: instance id: %w", ErrInvalidArgument, err)
	}
	return nil
}

// Start starts an instance of workflow with a caller-chosen id. Starting
// an id that exists already is a no-op: it returns that instance's status
// (whatever its workflow and input). The instance runs when the
// processor next ticks. The id is 1 to 200 bytes of UTF-8 without control
// characters, and neither "." nor ".." (no URL path carries them to the
// dashboard); [ErrInvalidArgument] otherwise.
func Start[I any](ctx context.Context, e *Engine, workflow, instance string, input I) (Status, error) {
	if err := checkNewID(instance); err != nil {
		return Status{}, err
	}
	e.mu.RLock()
	wf, known := e.workflows[workflow]
	e.mu.RUnlock()
	if !known {
		return Status{}, fmt.Errorf("%w: %q", ErrUnknownWorkflow, workflow)
	}
	in, err := json.Marshal(input)
	if err != nil {
		return Status{}, fmt.Errorf("%w: input of %s: %v", ErrInvalidArgument, instance, err)
	}
	now := e.clock.Now()
	// The instance's trace begins here; its context goes into the
	// history, so that every wake-up continues it.
	span, traced := e.tr.startInstance(ctx, wf, instance, now)
	started := workflowStarted{Workflow: workflow, Input: in, At: now, Trace: traced}
	err = e.inTx(ctx, func(tx *sqlx.Tx) error {
		if _, err := e.store.AppendTx(ctx, tx, streamOf(instance), eventstore.NoStream, started); err != nil {
			return err
		}
		return e.list.AddTx(ctx, tx, instance, now)
	})
	existing := errors.Is(err, eventstore.ErrWrongExpectedVersion)
	endInstance(span, err, existing, e.clock.Now())
	if err != nil && !existing {
		return Status{}, fmt.Errorf("orchestration: start %s: %w", instance, err)
	}
	if err == nil {
		e.ins.started.Add(ctx, 1, wf.add...) // committed: counted once
	}
	return e.Status(ctx, instance)
}

func (e *Engine) inTx(ctx context.Context, f func(*sqlx.Tx) error) error {
	tx, err := e.db.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		return errors.Join(err, tx.Rollback())
	}
	return tx.Commit()
}

// loaded is an execution with its function's input.
type loaded struct {
	*execution
	input json.RawMessage
}

// prepare makes an execution of an instance's history; nil when there is
// nothing to run (unknown or finished).
func (e *Engine) prepare(ctx context.Context, instance string, history []eventstore.Recorded) (*loaded, *registered, error) {
	if len(history) == 0 {
		return nil, nil, nil
	}
	st := fold(instance, history)
	if st.State != Running {
		return nil, nil, nil
	}
	e.mu.RLock()
	wf, ok := e.workflows[st.Workflow]
	e.mu.RUnlock()
	if !ok {
		return nil, nil, fmt.Errorf("orchestration: wake %s: %w: %q is not registered in this process", instance, ErrUnknownWorkflow, st.Workflow)
	}
	x := &execution{engine: e, wf: wf, ctx: ctx, instance: instance, stream: streamOf(instance)}
	x.read(history)
	return &loaded{x, history[0].Event.(workflowStarted).Input}, wf, nil
}

// callWorkflow runs the function, turning a panic into an error.
func callWorkflow(fn func(*execution, json.RawMessage) (json.RawMessage, error), x *loaded, input json.RawMessage) (out json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("orchestration: workflow panicked: %v", p)
		}
	}()
	return fn(x.execution, input)
}

// finish records how the execution ended in its pending events: it is
// stuck (after what it recorded before), suspended (x.wakeAt), or done — completed, or failed or cancelled
// once its compensations ran (each appended as it goes, since each is a
// side effect). What is pending is for the caller to append, with the
// wake-up of a suspended instance.
func (e *Engine) finish(ctx context.Context, x *loaded, out json.RawMessage, runErr error) error {
	if runErr == nil && x.sawCancel {
		runErr = ErrCancelled // a cancel the function swallowed still cancels it
	}
	if x.abort == nil && x.stuck == nil {
		x.checkOldBranches()
	}
	if d, early := x.endedEarly(); early && x.abort == nil && x.stuck == nil && !x.suspended {
		// The code returned where the history goes on (a Patched call
		// removed right before the end, say): ending the instance would
		// drop what the history says happened next.
		x.stuck = fmt.Errorf("%w: the code ended before %s", ErrNondeterministic, describe(d))
	}
	switch {
	case x.abort != nil:
		return x.abort
	case x.stuck != nil:
		// What the execution recorded before it stuck stays: a step whose
		// side effect ran, a signal taken, a timer found over. Only live
		// calls record, and none records once the replay disagreed, so
		// all of it is what happened; the stuck event comes after it.
		x.suspended = false
		x.pending = append(x.pending, workflowStuck{Error: x.stuck.Error()})
	case x.suspended:
	case runErr == nil:
		x.record(workflowCompleted{Output: out})
	default:
		// Failed or cancelled: undo what was done, newest first.
		for i := len(x.compensations) - 1; i >= 0; i-- {
			c := x.compensations[i]
			if done, ok := x.peek().(compensationCompleted); ok && done.Name == c.name {
				x.next++
				continue
			}
			x.flush()
			if x.abort != nil {
				return x.abort
			}
			if err := runCompensation(ctx, c); err != nil {
				return fmt.Errorf("orchestration: %s: compensation %q: %w", x.instance, c.name, err) // retried at the item's backoff
			}
			x.record(compensationCompleted{Name: c.name})
		}
		if errors.Is(runErr, ErrCancelled) {
			x.record(workflowCancelled{})
		} else {
			x.record(workflowFailed{Error: runErr.Error()})
		}
	}
	return nil
}

func runCompensation(ctx context.Context, c compensation) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panicked: %v", p)
		}
	}()
	return c.fn(ctx)
}
