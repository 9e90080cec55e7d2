package tick

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/passage-of-time/passage/internal/telemetrytest"
)

// collected is one collection of the package's metrics.
type collected struct{ telemetrytest.Collected }

func collect(t *testing.T, reader *sdkmetric.ManualReader) collected {
	t.Helper()
	return collected{telemetrytest.Collect(t, reader, scope)}
}

// count is the value of the counter name for u, or of its series without
// attributes when u is empty, failing when it has no such series. Every
// series must be a unit's or have no attribute.
func (c collected) count(t *testing.T, name string, u Unit) int64 {
	t.Helper()
	n, ok := c.Counts(t, name, "unit")[string(u)]
	require.True(t, ok, "%s has no series of unit %q: %v", name, u, c.Collected[name])
	return n
}

// lag is the emission lag histogram's series of u.
func (c collected) lag(t *testing.T, u Unit) metricdata.HistogramDataPoint[float64] {
	t.Helper()
	dp, ok := c.Histograms(t, metricLag, "unit")[string(u)]
	require.True(t, ok, "%s has no series of %s", metricLag, u)
	return dp
}

// unitFigures is what the test expects of one unit, worked out from the
// fake clock's advances alone.
type unitFigures struct {
	emitted, skipped int64
	boundaries       []time.Time
	lags             int
	lagSum           float64
}

// emit expects boundary b emitted with the clock at now.
func (f *unitFigures) emit(b, now time.Time) {
	f.emitted++
	f.boundaries = append(f.boundaries, b)
	f.lags++
	f.lagSum += now.Sub(b).Seconds()
}

// truncatedIn lists the multiples of period in (from, to], in UTC: the
// minutes and hours of a UTC ticker, computed without the package.
func truncatedIn(from, to time.Time, period time.Duration) []time.Time {
	var out []time.Time
	for b := from.Truncate(period).Add(period); !b.After(to); b = b.Add(period) {
		out = append(out, b.UTC())
	}
	return out
}

// The metrics read back after a restart and a day of fake-clock advances
// are what the advances make of it: per unit, the boundaries emitted (as
// the publisher got them), the skipped ones each counted once and never as
// emitted, and the lag histogram's count and sum from each boundary to
// the clock's reading at its emission. Minutes catch up latest-only,
// hours skip what was missed; both emit a live boundary.
func TestMetricsFollowTheFakeClock(t *testing.T) {
	t.Parallel()
	periods := map[Unit]time.Duration{Minute: time.Minute, Hour: time.Hour}
	for _, f := range storeFactories() {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			store, _ := f.open(t)
			// Down since 23:50 (minutes) and 19:00 (hours); back at 00:00:30.
			cursors := map[Unit]time.Time{
				Minute: epoch.Add(-10*time.Minute - 30*time.Second),
				Hour:   epoch.Add(-5*time.Hour - 30*time.Second),
			}
			for u, c := range cursors {
				require.NoError(t, store.Advance(ctx, u, time.Time{}, c, 0))
			}
			mp, reader := telemetrytest.MeterReader(t)
			clock := clockwork.NewFakeClockAt(epoch)
			tk, rec := setup(t, clock, store, WithUnits(Minute, Hour),
				WithCatchUp(Minute, LatestOnly{}), WithCatchUp(Hour, Skip{}), WithMeterProvider(mp))

			want := map[Unit]*unitFigures{Minute: {}, Hour: {}}
			// The restart's pass: nothing it finds is live. The minutes
			// emit their latest, the hours none.
			advance(t, clock, 0, tk)
			now := clock.Now()
			for u, c := range cursors {
				passed := truncatedIn(c, now, periods[u])
				keep := 1
				if u == Hour {
					keep = 0
				}
				want[u].skipped += int64(len(passed) - keep)
				if keep == 1 {
					want[u].emit(passed[len(passed)-1], now)
				}
			}
			// Live passes: both policies emit the boundary that has just
			// passed and skip the ones before it.
			for _, d := range []time.Duration{time.Minute, time.Hour, 3 * time.Hour, 25 * time.Minute, 21 * time.Hour} {
				before := now
				advance(t, clock, d, tk)
				now = clock.Now()
				for u, p := range periods {
					passed := truncatedIn(before, now, p)
					if len(passed) == 0 {
						continue
					}
					want[u].skipped += int64(len(passed) - 1)
					want[u].emit(passed[len(passed)-1], now)
				}
			}

			events, skips := rec.take()
			got := map[Unit][]time.Time{}
			for _, e := range events {
				got[e.Unit()] = append(got[e.Unit()], e.Boundary().UTC())
			}
			reported := map[Unit]int64{}
			for _, s := range skips {
				reported[s.Unit] += s.Count
			}
			m := collect(t, reader)
			for u, w := range want {
				require.Equal(t, w.boundaries, got[u], "the oracle's %s boundaries are the publisher's", u)
				require.Equal(t, w.skipped, reported[u], "the oracle's %s skips are the reports'", u)
				require.Equal(t, w.emitted, m.count(t, metricEmitted, u), "%s emitted", u)
				require.Equal(t, w.skipped, m.count(t, metricSkipped, u), "%s skipped", u)
				require.Zero(t, m.count(t, metricPublishFailure, u), "%s publish failures", u)
				require.Zero(t, m.count(t, metricStoreFailure, u), "%s store failures", u)
				lag := m.lag(t, u)
				require.Equal(t, uint64(w.lags), lag.Count, "%s lag count", u)
				require.InDelta(t, w.lagSum, lag.Sum, 1e-9, "%s lag sum", u)
			}
			require.Positive(t, want[Hour].skipped)
			require.Positive(t, want[Minute].skipped)
		})
	}
}

// A skip report is counted once, when it was published, even though the
// publish of the boundary kept after it fails twice and is retried: the
// skipped counter says 71, the publish failures 2, the emitted 1 with
// its lag from the boundary to the clock.
func TestMetricsCountASkipOnceAcrossRetries(t *testing.T) {
	t.Parallel()
	for _, f := range storeFactories() {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			store, _ := f.open(t)
			start := time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)
			require.NoError(t, store.Advance(ctx, Hour, time.Time{}, start, 0))
			clock := clockwork.NewFakeClockAt(start.Add(72*time.Hour + 30*time.Minute))
			mp, reader := telemetrytest.MeterReader(t)
			rec := &recorder{}
			tk, err := New(rec, store, WithClock(clock), WithUnits(Hour), WithCatchUp(Hour, LatestOnly{}),
				WithLogger(discard), WithMeterProvider(mp))
			require.NoError(t, err)

			down := errors.New("receiver down")
			refused := 0
			rec.fail = func(e any) error {
				if _, ok := e.(Event); ok && refused < 2 {
					refused++
					return down
				}
				return nil
			}
			require.ErrorIs(t, tk.EmitDue(ctx), down)
			require.ErrorIs(t, tk.EmitDue(ctx), down)
			require.NoError(t, tk.EmitDue(ctx))

			m := collect(t, reader)
			require.Equal(t, int64(71), m.count(t, metricSkipped, Hour))
			require.Equal(t, int64(1), m.count(t, metricEmitted, Hour))
			require.Equal(t, int64(2), m.count(t, metricPublishFailure, Hour))
			lag := m.lag(t, Hour)
			require.Equal(t, uint64(1), lag.Count)
			require.InDelta(t, (30 * time.Minute).Seconds(), lag.Sum, 1e-9, "from 72:00 to 72:30")
		})
	}
}

// brokenLease refuses to take the lease.
type brokenLease struct{ *MemoryStore }

func (brokenLease) AcquireLease(context.Context, string, time.Time, time.Duration) (Lease, error) {
	return Lease{}, errors.New("lease table on fire")
}

// A failed store call is counted with the unit whose cursor it read or
// wrote, and a failed lease call, which is no one unit's, without
// attributes.
func TestMetricsCountStoreFailuresByUnit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mp, reader := telemetrytest.MeterReader(t)
	clock := clockwork.NewFakeClockAt(epoch)
	tk, err := New(&recorder{}, brokenStore{NewMemoryStore()}, WithClock(clock), WithUnits(Minute, Hour),
		WithLogger(discard), WithMeterProvider(mp))
	require.NoError(t, err)
	require.ErrorContains(t, tk.EmitDue(ctx), "disk on fire")
	require.ErrorContains(t, tk.EmitDue(ctx), "disk on fire")
	m := collect(t, reader)
	for _, u := range []Unit{Minute, Hour} {
		require.Equal(t, int64(2), m.count(t, metricStoreFailure, u), "%s", u)
	}

	tk, err = New(&recorder{}, brokenLease{NewMemoryStore()}, WithClock(clock), WithUnits(Minute),
		WithLease("a", time.Minute), WithLogger(discard), WithMeterProvider(mp))
	require.NoError(t, err)
	require.ErrorContains(t, tk.EmitDue(ctx), "lease table on fire")
	m = collect(t, reader)
	require.Equal(t, int64(1), m.count(t, metricStoreFailure, ""))
	require.Equal(t, int64(2), m.count(t, metricStoreFailure, Minute), "the first ticker's")
}

// The counters of every unit exist at zero from New, before anything
// passes, so that a rate over them is defined from the start.
func TestMetricsStartAtZero(t *testing.T) {
	t.Parallel()
	mp, reader := telemetrytest.MeterReader(t)
	_, err := New(&recorder{}, NewMemoryStore(), WithUnits(Minute, Day), WithMeterProvider(mp))
	require.NoError(t, err)
	m := collect(t, reader)
	for _, name := range []string{metricEmitted, metricSkipped, metricPublishFailure, metricStoreFailure} {
		for _, u := range []Unit{Minute, Day} {
			require.Zero(t, m.count(t, name, u), fmt.Sprintf("%s %s", name, u))
		}
	}
}
