package todolist

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// Recording costs no allocation without an SDK: with the global provider
// none was installed in, and with the API's no-op provider. The
// benchmarks would show an allocation per item as many more per tick.
func TestRecordingWithoutAnSDKAllocatesNothing(t *testing.T) {
	db, _ := sqldbtest.SQLite(t)
	ctx := context.Background()
	for name, opts := range map[string][]ListOption{
		"global": nil,
		"no-op":  {WithMeterProvider(noop.NewMeterProvider())},
	} {
		l, err := Open(ctx, db.DB, "allocs", opts...)
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
		})
		require.Zero(t, allocs, name)
	}
}
