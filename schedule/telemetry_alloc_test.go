package schedule

import (
	"context"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// Recording and tracing cost no allocation without an SDK: with the
// global providers none was installed in, and with the API's no-op ones.
// BenchmarkEveryMinute would show an allocation a run as 10,000 more a
// minute.
func TestTelemetryWithoutAnSDKAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	slot := time.Date(2026, 5, 1, 0, 1, 0, 0, time.UTC)
	run := Run{RunID: "r", SlotID: SlotID("a", slot), Schedule: "a", Slot: slot, FiredAt: slot, Attempt: 1}
	fs := []firing{{st: state{Name: "a"}, d: Definition{Name: "a", Jitter: time.Minute}, run: run, fired: 1, start: slot.Add(time.Second)}}
	reports := []SlotsSkipped{{Schedule: "a", From: slot, To: slot, Count: 3}}
	for name, c := range map[string]struct {
		opts []Option
	}{
		"global":             {},
		"no-op":              {[]Option{WithMeterProvider(metricnoop.NewMeterProvider()), WithTracerProvider(tracenoop.NewTracerProvider())}},
		"global, one series": {[]Option{WithMetricsPerSchedule(false)}},
	} {
		o := defaults()
		for _, opt := range c.opts {
			require.NoError(t, opt(&o))
		}
		if o.meters == nil {
			o.meters = otel.GetMeterProvider()
		}
		if o.tracers == nil {
			o.tracers = otel.GetTracerProvider()
		}
		s := &Scheduler{options: o, ins: newInstruments(o.meters, !o.unnamedMetrics), tr: newTracing(o.tracers),
			handler: func(context.Context, *sqlx.Tx, Run) error { return nil }}
		allocs := testing.AllocsPerRun(100, func() {
			s.measureBatch(ctx, fs, reports)
			s.ins.ran(ctx, "a")
			require.NoError(t, s.callHandler(ctx, nil, run, slot))
		})
		require.Zero(t, allocs, name)
	}
}
