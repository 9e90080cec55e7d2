package orchestration

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/internal/telemetrytest"
)

// Recording and tracing cost no allocation without an SDK: with the
// global providers none was installed in, and with the API's no-op
// providers. An execution notes the lateness of its wake-ups and counts
// its end when its write commits, and no span is started, so nothing is
// recorded in the history either.
func TestTelemetryWithoutAnSDKAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	db, _ := sqldbtest.SQLite(t)
	ctx := context.Background()
	for name, p := range telemetrytest.WithoutAnSDK() {
		clock := clockwork.NewFakeClockAt(t0)
		e, err := New(ctx, db.DB, WithMeterProvider(p.Meters), WithTracerProvider(p.Tracers), WithClock(clock))
		require.NoError(t, err)
		require.NoError(t, Register(e, "nap", func(Context, int) (int, error) { return 0, nil }))
		wf := e.workflows["nap"]
		x := &execution{engine: e, wf: wf, ctx: ctx, instance: "i"}
		events := []any{timerFired{Seq: 0}, stepCompleted{Name: "a"}, workflowCompleted{}, workflowFailed{}, workflowCancelled{}, workflowStuck{}}
		info := StepInfo{Instance: "i", Name: "a", Attempt: 1, Key: "i/0/a"}
		allocs := testing.AllocsPerRun(100, func() {
			e.ins.started.Add(ctx, 1, wf.add...)
			x.late = nil // as a new execution's
			x.resumed(t0.Add(-time.Minute))
			x.resumed(t0.Add(-time.Second))
			x.committed(ctx, events)
			if span, tc := e.tr.startInstance(ctx, wf, "i", t0); span != nil || tc != nil {
				t.Fatal("Start traced without an SDK")
			}
			if _, span := e.tr.startWakeup(ctx, x, t0, t0); span != nil {
				t.Fatal("a wake-up span started without an SDK")
			}
			if _, span := e.tr.startStep(ctx, wf, info, t0); span != nil {
				t.Fatal("a step span started without an SDK")
			}
		})
		require.Zero(t, allocs, name)
	}
}
