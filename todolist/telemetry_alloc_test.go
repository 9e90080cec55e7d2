package todolist

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/internal/telemetrytest"
)

// Recording and tracing cost no allocation without an SDK: with the
// global providers none was installed in, and with the API's no-op
// providers; no span is started. The benchmarks would show an allocation
// per item as many more per tick.
func TestRecordingWithoutAnSDKAllocatesNothing(t *testing.T) {
	db, _ := sqldbtest.SQLite(t)
	ctx := context.Background()
	for name, p := range telemetrytest.WithoutAnSDK() {
		l, err := Open(ctx, db.DB, "allocs", WithMeterProvider(p.Meters), WithTracerProvider(p.Tracers))
		require.NoError(t, err)
		p := &Processor{list: l}
		due, now := time.Unix(0, 0), time.Unix(60, 0)
		batch := []claimed{{Item: Item{ID: "a", Due: due}}, {Item: Item{ID: "b", Due: due}}}
		allocs := testing.AllocsPerRun(100, func() {
			l.ins.added.Add(ctx, 1, l.ins.add...)
			l.ins.completed.Add(ctx, 1, l.ins.add...)
			l.ins.failed.Add(ctx, 1, l.ins.add...)
			l.ins.parked.Add(ctx, 1, l.ins.add...)
			l.ins.late(ctx, due, now)
			p.lateBatch(ctx, batch, now)
			if _, span := l.tr.startAction(ctx, batch[0].Item, now); span != nil {
				t.Fatal("a span started without an SDK")
			}
			if _, span := l.tr.startBatch(ctx, batch, now); span != nil {
				t.Fatal("a span started without an SDK")
			}
		})
		require.Zero(t, allocs, name)
	}
}
