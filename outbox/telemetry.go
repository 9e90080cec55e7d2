package outbox

import (
	"context"
	"fmt"
	"time"
	"weak"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/passage-of-time/passage/internal/sqldb"
	ptel "github.com/passage-of-time/passage/internal/telemetry"
)

// scope is the instrumentation scope of the package's meters.
const scope = "github.com/passage-of-time/passage/outbox"

// The instruments an outbox records to (see [WithMeterProvider]). The
// gauges are read from the database at each collection, so every
// process reports the same figures; the counter counts this process's
// pruning.
const (
	metricRecords = "passage.outbox.records"
	metricOldest  = "passage.outbox.oldest.age"
	metricPruned  = "passage.outbox.records.pruned"
)

// WithMeterProvider sets the OpenTelemetry meter provider the outbox
// records its figures with (the global one by default): the records it
// holds (passage.outbox.records), the age of the oldest
// (passage.outbox.oldest.age, seconds, 0 when it holds none) — both read
// from the database at each collection, a count of the whole table — and
// the records this process pruned (passage.outbox.records.pruned). The
// package imports the API only; without an SDK installed, nothing is
// read and recording costs no allocation.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(o *Outbox) error {
		if mp == nil {
			return fmt.Errorf("%w: WithMeterProvider: nil provider", ErrInvalidOption)
		}
		o.meters = mp
		return nil
	}
}

// sizeTimeout bounds the count the gauges make at each collection: an
// exporter may collect without a deadline.
const sizeTimeout = 5 * time.Second

// instruments are an outbox's metric instruments.
type instruments struct {
	pruned metric.Int64Counter
}

// newInstruments makes o's instruments with mp and registers the gauges'
// reading. An instrument the provider refuses is reported to the global
// error handler and replaced by a no-op one: telemetry never keeps an
// outbox from opening. The reading holds o weakly: an outbox no longer
// used reads nothing. An outbox opened twice on one database and provider
// observes the same figures twice, which a gauge keeps once.
func newInstruments(mp metric.MeterProvider, o *Outbox) instruments {
	in := ptel.NewInstruments(mp, scope)
	ins := instruments{
		pruned: in.Counter(metricPruned, "{record}", "Outbox records pruned by this process: taken or parked by every sink, and older than the retention."),
	}
	meter := in.Meter()
	records, err := meter.Int64ObservableGauge(metricRecords, metric.WithUnit("{record}"),
		metric.WithDescription("Records the outbox holds, delivered or not, read from the database at each collection."))
	in.Fail(metricRecords, err)
	oldest, err := meter.Float64ObservableGauge(metricOldest, metric.WithUnit("s"),
		metric.WithDescription("Age of the oldest record the outbox holds (0 when none), by the outbox's clock, read at each collection."))
	in.Fail(metricOldest, err)
	if records != nil && oldest != nil {
		wo := weak.Make(o)
		_, err = meter.RegisterCallback(func(ctx context.Context, obs metric.Observer) error {
			o := wo.Value()
			if o == nil {
				return nil
			}
			ctx, cancel := context.WithTimeout(ctx, sizeTimeout)
			defer cancel()
			n, at, err := o.d.size(ctx)
			if err != nil {
				return fmt.Errorf("outbox: read its size: %w", err)
			}
			age := 0.0
			if n > 0 {
				age = max(o.clock.Since(sqldb.DecodeTime(at)).Seconds(), 0)
			}
			obs.ObserveInt64(records, int64(n))
			obs.ObserveFloat64(oldest, age)
			return nil
		}, records, oldest)
		in.Fail(metricRecords+" and "+metricOldest, err)
	}
	if err := in.Err(); err != nil {
		otel.Handle(fmt.Errorf("outbox: metrics: %w", err))
	}
	return ins
}

// prunedRecords counts n records pruned.
func (ins *instruments) prunedRecords(ctx context.Context, n int) {
	if n > 0 {
		ins.pruned.Add(ctx, int64(n))
	}
}
