package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/internal/telemetrytest"
	"github.com/passage-of-time/passage/outbox"
)

const scope = "github.com/passage-of-time/passage/outbox"

// The outbox's size and its oldest record's age are gauges read from the
// database at each collection, the records pruned a counter; ReadSize
// reads the same figures for a status page, and reads a database whose
// outbox was never opened as empty without creating anything.
func TestSizeAndAgeAreMetricsAndReadable(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			records, oldest, err := outbox.ReadSize(ctx, db)
			require.NoError(t, err)
			require.Zero(t, records)
			require.True(t, oldest.IsZero())
			tables, err := sqldb.Tables(ctx, db)
			require.NoError(t, err)
			require.False(t, tables["outbox_records"], "ReadSize created nothing")

			mp, reader := telemetrytest.MeterReader(t)
			clock := clockwork.NewFakeClockAt(t0)
			o, err := outbox.Open(ctx, db.DB, outbox.WithClock(clock), outbox.WithMeterProvider(mp))
			require.NoError(t, err)
			got := telemetrytest.Collect(t, reader, scope)
			require.Equal(t, map[string]int64{"": 0}, got.Gauges(t, "passage.outbox.records", ""))
			require.Equal(t, 0.0, floatGauge(t, got, "passage.outbox.oldest.age"), "none held")

			write(t, db, o, rec("a", "a1"), rec("a", "a2"), rec("b", "b1"))
			clock.Advance(time.Hour)
			write(t, db, o, rec("a", "a3"), rec("b", "b2"))
			got = telemetrytest.Collect(t, reader, scope)
			require.Equal(t, map[string]int64{"": 5}, got.Gauges(t, "passage.outbox.records", ""))
			require.Equal(t, 3600.0, floatGauge(t, got, "passage.outbox.oldest.age"))
			require.Empty(t, got.Counts(t, "passage.outbox.records.pruned", ""), "nothing pruned yet")

			r := &receiver{}
			relay, err := outbox.NewRelay(o, "hook", r.deliver, outbox.WithFrom(outbox.FromBeginning))
			require.NoError(t, err)
			passUntil(t, relay, r, 5)
			clock.Advance(time.Hour) // a1, a2, b1 two hours old, a3 and b2 one
			n, err := o.Prune(ctx, 90*time.Minute)
			require.NoError(t, err)
			require.Equal(t, 3, n)
			got = telemetrytest.Collect(t, reader, scope)
			require.Equal(t, map[string]int64{"": 2}, got.Gauges(t, "passage.outbox.records", ""))
			require.Equal(t, 3600.0, floatGauge(t, got, "passage.outbox.oldest.age"))
			require.Equal(t, map[string]int64{"": 3}, got.Counts(t, "passage.outbox.records.pruned", ""))

			records, oldest, err = outbox.ReadSize(ctx, db)
			require.NoError(t, err)
			require.Equal(t, 2, records)
			require.Equal(t, t0.Add(time.Hour), oldest)
		})
	}
}

// floatGauge is the value of the float64 gauge name, which has one
// series without attributes.
func floatGauge(t *testing.T, c telemetrytest.Collected, name string) float64 {
	t.Helper()
	m, ok := c[name]
	require.True(t, ok, "%s collected", name)
	g, ok := m.Data.(metricdata.Gauge[float64])
	require.True(t, ok, "%s is a %T, want a float64 gauge", name, m.Data)
	require.Len(t, g.DataPoints, 1)
	require.Zero(t, g.DataPoints[0].Attributes.Len())
	return g.DataPoints[0].Value
}
