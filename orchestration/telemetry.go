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
