package schedule

import (
	"context"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/telemetrytest"
)

// Recording and tracing cost no allocation without an SDK: with the
// global providers none was installed in, and with the API's no-op ones,
// with the schedule's attribute or without. BenchmarkEveryMinute would
// show an allocation a run as 10,000 more a minute.
func TestTelemetryWithoutAnSDKAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	slot := time.Date(2026, 5, 1, 0, 1, 0, 0, time.UTC)
	run := Run{RunID: "r", SlotID: SlotID("a", slot), Schedule: "a", Slot: slot, FiredAt: slot, Attempt: 1}
	fs := []firing{{st: state{Name: "a"}, d: Definition{Name: "a", Jitter: time.Minute}, run: run, fired: 1, start: slot.Add(time.Second)}}
	reports := []SlotsSkipped{{Schedule: "a", From: slot, To: slot, Count: 3}}
	for name, p := range telemetrytest.WithoutAnSDK() {
		for _, perSchedule := range []bool{true, false} {
			o := defaults()
			for _, opt := range []Option{WithMeterProvider(p.Meters), WithTracerProvider(p.Tracers), WithMetricsPerSchedule(perSchedule)} {
				require.NoError(t, opt(&o))
			}
			s := &Scheduler{options: o, ins: newInstruments(o.meters, !o.unnamedMetrics), tr: newTracing(o.tracers),
				handler: func(context.Context, *sqlx.Tx, Run) error { return nil }}
			allocs := testing.AllocsPerRun(100, func() {
				s.measureBatch(ctx, fs, reports)
				s.ins.ran(ctx, "a")
				require.NoError(t, s.callHandler(ctx, nil, run, slot))
			})
			require.Zero(t, allocs, "%s, metrics per schedule %v", name, perSchedule)
		}
	}
}
