package tick

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// lags collects wake-up delays after boundaries.
type lags struct {
	mu   sync.Mutex
	d    []time.Duration
	want int
	full chan struct{}
}

func newLags(want int) *lags { return &lags{want: want, full: make(chan struct{})} }

func (l *lags) add(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.d) < l.want {
		l.d = append(l.d, d)
		if len(l.d) == l.want {
			close(l.full)
		}
	}
}

func (l *lags) stats() (median, maximum time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := slices.Clone(l.d)
	slices.Sort(s)
	return s[len(s)/2], s[len(s)-1]
}

type lagPublisher struct{ l *lags }

func (p lagPublisher) Publish(_ context.Context, events ...any) error {
	now := time.Now()
	for _, e := range events {
		p.l.add(now.Sub(e.(Event).Boundary()))
	}
	return nil
}

// BenchmarkEmissionLag measures, on the real clock, the delay from a
// boundary to its publish, next to a bare gocron job woken on the same
// boundaries in the same run: 40 boundaries of the 100 ms test unit.
func BenchmarkEmissionLag(b *testing.B) {
	const samples = 40
	ctx := context.Background()
	all, allBare := newLags(0), newLags(0)
	for b.Loop() {
		ours, bare := newLags(samples), newLags(samples)
		tk, err := New(lagPublisher{ours}, NewMemoryStore(), WithUnits(tenth))
		require.NoError(b, err)

		sched, err := gocron.NewScheduler()
		require.NoError(b, err)
		period := fixedUnits[tenth]
		_, err = sched.NewJob(gocron.DurationJob(period),
			gocron.NewTask(func() {
				now := time.Now()
				bare.add(now.Sub(now.Truncate(period)))
			}),
			gocron.WithStartAt(gocron.WithStartDateTime(time.Now().Truncate(period).Add(2*period))))
		require.NoError(b, err)

		require.NoError(b, tk.Start(ctx))
		sched.Start()
		<-ours.full
		<-bare.full
		require.NoError(b, tk.Stop(ctx))
		require.NoError(b, sched.Shutdown())

		all.d, allBare.d = append(all.d, ours.d...), append(allBare.d, bare.d...)
	}
	// Over every boundary of every iteration.
	oursMed, oursMax := all.stats()
	bareMed, bareMax := allBare.stats()
	b.ReportMetric(float64(oursMed.Microseconds()), "tick-median-µs")
	b.ReportMetric(float64(oursMax.Microseconds()), "tick-max-µs")
	b.ReportMetric(float64(bareMed.Microseconds()), "gocron-median-µs")
	b.ReportMetric(float64(bareMax.Microseconds()), "gocron-max-µs")
	b.ReportMetric(float64(oursMed)/float64(bareMed), "median-ratio")
}

type nopPublisher struct{}

func (nopPublisher) Publish(context.Context, ...any) error { return nil }

// BenchmarkCatchUp emits the minutes missed during a downtime to a no-op
// publisher with the SQLite cursor store. Besides time per event it
// reports x-floor, the ratio to a floor measured in the same run —
// computing the same boundaries and calling the publisher directly, with
// no ticker or store — and B/event, heap bytes allocated per event, which
// stays constant whatever the downtime because boundaries are emitted as
// they are computed, never collected.
func BenchmarkCatchUp(b *testing.B) {
	now := time.Date(2026, 3, 30, 12, 0, 30, 0, time.UTC)
	for _, days := range []int{1, 7, 28} {
		for _, batch := range []int{1, cursorBatch} {
			b.Run(fmt.Sprintf("days=%d/batch=%d", days, batch), func(b *testing.B) {
				defer setCursorBatch(batch)()
				benchCatchUp(b, now, days)
			})
		}
	}
}

func benchCatchUp(b *testing.B, now time.Time, days int) {
	ctx := context.Background()
	db, _ := sqldbtest.SQLite(b)
	store, err := NewSQLStore(ctx, db.DB)
	require.NoError(b, err)
	latest := Previous(Minute, now, nil)
	from := latest.Add(-time.Duration(days) * 24 * time.Hour)
	require.NoError(b, store.Advance(ctx, Minute, time.Time{}, from, 0))
	events := days * 24 * 60
	tk, err := New(nopPublisher{}, store, WithClock(clockwork.NewFakeClockAt(now)), WithUnits(Minute),
		WithCatchUp(Minute, All{Window: time.Duration(days+1) * 24 * time.Hour, Max: events}))
	require.NoError(b, err)
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		require.NoError(b, tk.EmitDue(ctx))
		b.StopTimer()
		require.NoError(b, store.Advance(ctx, Minute, latest, from, 0)) // rewind
		b.StartTimer()
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	require.Equal(b, int64(b.N*events), tk.Stats().Emitted)
	perEvent := float64(b.Elapsed().Nanoseconds()) / float64(b.N*events)
	b.ReportMetric(perEvent, "ns/event")
	floor := floorPerEvent(from, now, b.N)
	b.ReportMetric(floor, "floor-ns/event")
	b.ReportMetric(perEvent/floor, "x-floor")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N*events), "B/event")
	b.ReportMetric(float64(events), "events/op")
}

// floorPerEvent is the time per event of the least a catch-up must do:
// compute the boundaries in (from, now] and hand each to a publisher.
func floorPerEvent(from, now time.Time, rounds int) float64 {
	var pub Publisher = nopPublisher{}
	n := 0
	start := time.Now()
	for range rounds {
		for at := range Boundaries(Minute, from, now, nil) {
			_ = pub.Publish(context.Background(), MinuteHasPassed{Passage{At: at}})
			n++
		}
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n)
}
