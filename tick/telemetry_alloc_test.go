package tick

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/telemetrytest"
)

// Recording and tracing cost no allocation without an SDK: with the
// global providers, which no test of the package installs one in, and
// with the API's no-op providers; no span is started. BenchmarkCatchUp
// would show an allocation per event as 1440 more per op.
func TestRecordingWithoutAnSDKAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	for name, p := range telemetrytest.WithoutAnSDK() {
		tk, err := New(&recorder{}, NewMemoryStore(), WithMeterProvider(p.Meters), WithTracerProvider(p.Tracers), WithUnits(Minute, Hour))
		require.NoError(t, err)
		b, at := time.Unix(60, 0), time.Unix(61, 0)
		s := TicksSkipped{Unit: Hour, From: b, To: b, Count: 1, Policy: "skip"}
		allocs := testing.AllocsPerRun(100, func() {
			tk.tel.emitted(ctx, Minute, b, at)
			tk.tel.skipped(ctx, Hour, 3)
			tk.tel.publishFailed(ctx, Minute)
			tk.tel.storeFailed(ctx, Hour)
			tk.tel.storeFailed(ctx, "")
			if _, span := tk.tel.startEmit(ctx, Minute, b, true, at); span != nil {
				t.Fatal("a span started without an SDK")
			}
			if _, span := tk.tel.startSkip(ctx, s, at); span != nil {
				t.Fatal("a span started without an SDK")
			}
			tk.endSpan(nil, nil)
		})
		require.Zero(t, allocs, name)
	}
}
