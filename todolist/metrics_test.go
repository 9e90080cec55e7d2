package todolist_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/telemetrytest"
	"github.com/passage-of-time/passage/todolist"
)

// collected is one collection of the package's metrics.
type collected struct{ telemetrytest.Collected }

func collect(t *testing.T, reader *sdkmetric.ManualReader) collected {
	t.Helper()
	return collected{telemetrytest.Collect(t, reader, "github.com/passage-of-time/passage/todolist")}
}

// onlyList requires series to be the list's alone: each data point's
// attributes the list's name and nothing else (no item's ID, nothing
// unbounded; a series without attributes is keyed "").
func onlyList[V any](t *testing.T, list string, series map[string]V) {
	t.Helper()
	for name := range series {
		require.Equal(t, list, name, "the series of list %q alone: %v", list, series)
	}
}

// count is the value of the counter name for list (0 when never added to).
func (c collected) count(t *testing.T, name, list string) int64 {
	t.Helper()
	series := c.Counts(t, name, "list")
	onlyList(t, list, series)
	return series[list]
}

func (c collected) gauge(t *testing.T, name, list string) int64 {
	t.Helper()
	series := c.Gauges(t, name, "list")
	require.Len(t, series, 1)
	onlyList(t, list, series)
	return series[list]
}

func (c collected) histogram(t *testing.T, name, list string) metricdata.HistogramDataPoint[float64] {
	t.Helper()
	series := c.Histograms(t, name, "list")
	require.Len(t, series, 1)
	onlyList(t, list, series)
	return series[list]
}

// starts records when each item's action started, by the fake clock: the
// test's own account of lateness.
type starts struct {
	mu  sync.Mutex
	due map[string]time.Time
	at  []float64 // lateness of each start, in seconds
}

func (s *starts) start(it todolist.Item, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at = append(s.at, now.Sub(s.due[it.ID]).Seconds())
}

// processorKinds builds each kind of processor around decide, an
// action's decision for one item; each calls started with the fake
// clock's now when an action (a batch's, for a batch) starts.
var processorKinds = []struct {
	name string
	new  func(l *todolist.List, clock clockwork.Clock, started func(todolist.Item), decide func(todolist.Item) error, opts ...todolist.ProcessorOption) (*todolist.Processor, error)
}{
	{"per item", func(l *todolist.List, _ clockwork.Clock, started func(todolist.Item), decide func(todolist.Item) error, opts ...todolist.ProcessorOption) (*todolist.Processor, error) {
		return todolist.NewProcessor(l, func(_ context.Context, it todolist.Item) error {
			started(it)
			return decide(it)
		}, opts...)
	}},
	{"batch", func(l *todolist.List, _ clockwork.Clock, started func(todolist.Item), decide func(todolist.Item) error, opts ...todolist.ProcessorOption) (*todolist.Processor, error) {
		return todolist.NewBatchProcessor(l, func(_ context.Context, items []todolist.Item) ([]error, error) {
			return decideAll(items, started, decide), nil
		}, opts...)
	}},
	{"tx batch", func(l *todolist.List, _ clockwork.Clock, started func(todolist.Item), decide func(todolist.Item) error, opts ...todolist.ProcessorOption) (*todolist.Processor, error) {
		return todolist.NewTxBatchProcessor(l, func(_ context.Context, _ *sqlx.Tx, items []todolist.Item) ([]error, error) {
			return decideAll(items, started, decide), nil
		}, opts...)
	}},
}

// decideAll starts every item of a batch at once, then decides each.
func decideAll(items []todolist.Item, started func(todolist.Item), decide func(todolist.Item) error) []error {
	for _, it := range items {
		started(it)
	}
	out := make([]error, len(items))
	for i, it := range items {
		out[i] = decide(it)
	}
	return out
}

// TestMetricsCountWhatProcessorsDo drives a fake clock through three
// passes of each kind of processor and reads the metrics back: items
// added (an ID given twice to AddMany once), completed, failed attempts
// (the one that parks included), an item parked once however many
// passes follow, the lateness of every action start (from the item's due
// time, as the test's own clock readings give it, not from the claim),
// and the backlog of unparked items read at collection.
func TestMetricsCountWhatProcessorsDo(t *testing.T) {
	for _, kind := range processorKinds {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
				ctx := context.Background()
				clock := clockwork.NewFakeClockAt(t0)
				mp, reader := telemetrytest.MeterReader(t)
				l := openList(t, db, "metered", todolist.WithListClock(clock), todolist.WithMeterProvider(mp))
				due := map[string]time.Time{
					"a": t0.Add(-2 * time.Minute),
					"b": t0.Add(-30 * time.Second),
					"c": t0.Add(-10 * time.Second),
					"d": t0.Add(24 * time.Hour),
				}
				for id, at := range due {
					require.NoError(t, l.Add(ctx, id, at))
				}
				require.NoError(t, l.AddMany(ctx, []todolist.NewItem{
					{ID: "e", Due: t0.Add(48 * time.Hour)},
					{ID: "f", Due: t0.Add(48 * time.Hour)},
					{ID: "e", Due: t0.Add(49 * time.Hour)},
				}))
				due["e"], due["f"] = t0.Add(49*time.Hour), t0.Add(48*time.Hour)

				m := collect(t, reader)
				require.EqualValues(t, 6, m.count(t, "passage.todolist.items.added", "metered"))
				require.EqualValues(t, 6, m.gauge(t, "passage.todolist.backlog", "metered"), "every item is pending")

				oracle := &starts{due: due}
				started := func(it todolist.Item) { oracle.start(it, clock.Now()) }
				decide := func(it todolist.Item) error {
					switch it.ID {
					case "a":
						// A slow action: whatever starts after it starts
						// later than the batch was claimed.
						clock.Advance(7 * time.Second)
					case "b":
						return errFailed
					}
					return nil
				}
				p, err := kind.new(l, clock, started, decide,
					todolist.WithClock(clock), todolist.WithMaxAttempts(2), todolist.WithBackoff(time.Minute, time.Minute))
				require.NoError(t, err)

				r, err := p.Process(ctx, clock.Now())
				require.NoError(t, err)
				require.Equal(t, 2, r.Done)
				require.Equal(t, 1, r.Failed)
				m = collect(t, reader)
				require.EqualValues(t, 2, m.count(t, "passage.todolist.items.completed", "metered"))
				require.EqualValues(t, 1, m.count(t, "passage.todolist.items.failed", "metered"))
				require.EqualValues(t, 0, m.count(t, "passage.todolist.items.parked", "metered"))

				// b's backoff ends: its second failure parks it.
				clock.Advance(time.Minute)
				r, err = p.Process(ctx, clock.Now())
				require.NoError(t, err)
				require.Equal(t, 1, r.Parked)
				// Nothing is due any more: the parked item is not counted again.
				clock.Advance(2 * time.Minute)
				r, err = p.Process(ctx, clock.Now())
				require.NoError(t, err)
				require.Zero(t, r.Claimed)

				m = collect(t, reader)
				require.EqualValues(t, 6, m.count(t, "passage.todolist.items.added", "metered"))
				require.EqualValues(t, 2, m.count(t, "passage.todolist.items.completed", "metered"))
				require.EqualValues(t, 2, m.count(t, "passage.todolist.items.failed", "metered"), "both attempts at b, the one that parked it included")
				require.EqualValues(t, 1, m.count(t, "passage.todolist.items.parked", "metered"))
				require.EqualValues(t, 3, m.gauge(t, "passage.todolist.backlog", "metered"), "d, e and f; b is parked")

				// Lateness: every start, from the item's due time.
				require.Len(t, oracle.at, 4, "a, b, c, then b again")
				h := m.histogram(t, "passage.todolist.action.lateness", "metered")
				require.EqualValues(t, len(oracle.at), h.Count)
				var sum float64
				lowest, highest := oracle.at[0], oracle.at[0]
				buckets := make([]uint64, len(h.Bounds)+1)
				for _, s := range oracle.at {
					sum += s
					lowest, highest = min(lowest, s), max(highest, s)
					i := 0
					for i < len(h.Bounds) && s > h.Bounds[i] {
						i++
					}
					buckets[i]++
				}
				require.InDelta(t, sum, h.Sum, 1e-9)
				mn, ok := h.Min.Value()
				require.True(t, ok)
				require.InDelta(t, lowest, mn, 1e-9)
				mx, ok := h.Max.Value()
				require.True(t, ok)
				require.InDelta(t, highest, mx, 1e-9)
				require.Equal(t, buckets, h.BucketCounts)
				require.Contains(t, h.Bounds, 60.0, "a bound at a minute: a tick's worth of lateness")
			})
		})
	}
}

// TestTheBacklogGaugeReadsEveryListOpened: every list opened with a
// provider has its backlog read at each collection — not only the first
// one, however often each is opened — and only those: a list of the
// database opened without the provider is not reported.
func TestTheBacklogGaugeReadsEveryListOpened(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *sqldb.DB, _ string) {
		ctx := context.Background()
		clock := clockwork.NewFakeClockAt(t0)
		mp, reader := telemetrytest.MeterReader(t)
		var one *todolist.List
		for range 3 {
			one = openList(t, db, "one", todolist.WithListClock(clock), todolist.WithMeterProvider(mp))
		}
		two := openList(t, db, "two", todolist.WithMeterProvider(mp))
		other := openList(t, db, "other")
		addItems(t, one, t0.Add(-time.Minute), "parks")
		_, err := newProcessor(t, one, clock, fail, todolist.WithMaxAttempts(1)).Process(ctx, t0)
		require.NoError(t, err)
		addItems(t, one, t0, "a", "b")
		addItems(t, two, t0.Add(time.Hour), "c")
		addItems(t, other, t0, "d", "e", "f")

		got := collect(t, reader).Gauges(t, "passage.todolist.backlog", "list")
		require.Equal(t, map[string]int64{"one": 2, "two": 1}, got, "one's parked item is no backlog")

		// A list emptied reports zero, not nothing.
		require.NoError(t, two.Remove(ctx, "c"))
		got = collect(t, reader).Gauges(t, "passage.todolist.backlog", "list")
		require.Equal(t, map[string]int64{"one": 2, "two": 0}, got)
	})
}
