package orchestration

import (
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	ptel "github.com/passage-of-time/passage/internal/telemetry"
)

// scope is the instrumentation scope of the package's meters and tracers.
const scope = "github.com/passage-of-time/passage/orchestration"

// The instruments an engine records to (see [WithMeterProvider]).
const (
	metricStarted   = "passage.workflow.started"
	metricCompleted = "passage.workflow.completed"
	metricFailed    = "passage.workflow.failed"
	metricStuck     = "passage.workflow.stuck"
	metricCancelled = "passage.workflow.cancelled"
	metricLateness  = "passage.workflow.wakeup.lateness"
)

// workflowAttribute is the one attribute of the metrics: the workflow's
// name, bounded by the workflows registered (an instance's id never is
// one).
const workflowAttribute = "workflow"

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

// instruments are an engine's metric instruments.
type instruments struct {
	started, completed, failed, stuck, cancelled metric.Int64Counter
	lateness                                     metric.Float64Histogram
}

// newInstruments makes the instruments with mp. An instrument the
// provider refuses is reported to the global error handler and replaced
// by a no-op one: telemetry never keeps an engine from starting.
func newInstruments(mp metric.MeterProvider) instruments {
	in := ptel.NewInstruments(mp, scope)
	ins := instruments{
		started:   in.Counter(metricStarted, "{instance}", "Workflow instances started by this process."),
		completed: in.Counter(metricCompleted, "{instance}", "Workflow instances whose completion this process recorded."),
		failed:    in.Counter(metricFailed, "{instance}", "Workflow instances whose failure this process recorded, after their compensations."),
		stuck:     in.Counter(metricStuck, "{instance}", "Workflow instances this process found stuck: their history disagreed with their function."),
		cancelled: in.Counter(metricCancelled, "{instance}", "Workflow instances whose cancellation this process recorded, after their compensations."),
		// The to-do lists' buckets: an instance wakes up as an item of one.
		lateness: in.Histogram(metricLateness, "s", "From the end of a delay a workflow instance slept on to the moment it resumed past it.",
			ptel.LatenessBuckets),
	}
	if err := in.Err(); err != nil {
		otel.Handle(fmt.Errorf("orchestration: metrics: %w", err))
	}
	return ins
}

// measured is a workflow's attribute set, made once at Register into the
// options each measurement takes, so that recording allocates nothing.
type measured struct {
	add    []metric.AddOption
	record []metric.RecordOption
}

func newMeasured(workflow string) measured {
	a := ptel.NewAttributes(attribute.String(workflowAttribute, workflow))
	return measured{add: a.Add, record: a.Record}
}
