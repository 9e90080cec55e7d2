package natsjs_test

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/natsjs"
	"github.com/passage-of-time/passage/tick"
)

// Two ticker replicas that both emit every boundary — each with a cursor
// of its own, as two services each running a ticker, or a lease handed
// over before the old holder's cursor write — store each boundary once.
func TestTwoTickerReplicasStoreEachBoundaryOnce(t *testing.T) {
	t.Parallel()
	url := serverURL(t)
	n := unique(t)
	ctx := context.Background()
	_, js := connect(t, url)
	ensure(t, js, n)
	clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 26, 12, 0, 30, 0, time.UTC))
	var replicas []*tick.Ticker
	var pubs []*natsjs.Publisher
	for range 2 {
		_, js := connect(t, url)
		pub, err := natsjs.NewPublisher(ctx, js, n.prefix)
		require.NoError(t, err)
		tk, err := tick.New(pub, tick.NewMemoryStore(), tick.WithClock(clock), tick.WithUnits(tick.Minute))
		require.NoError(t, err)
		require.NoError(t, tk.Start(ctx))
		t.Cleanup(func() { _ = tk.Stop(context.Background()) })
		replicas = append(replicas, tk)
		pubs = append(pubs, pub)
	}
	for range 10 {
		require.NoError(t, tick.AdvanceAndWait(ctx, clock, time.Minute, replicas...))
	}

	var got []time.Time
	for _, m := range stored(t, js, n.stream) {
		p := passageIn(t, m.Data)
		got = append(got, p.At.UTC())
	}
	var want []time.Time
	for i := 1; i <= 10; i++ {
		want = append(want, minute(i))
	}
	require.Equal(t, want, got, "each minute once, in order")
	a, b := pubs[0].Stats(), pubs[1].Stats()
	require.EqualValues(t, 10, a.Stored+b.Stored)
	require.EqualValues(t, 10, a.Duplicates+b.Duplicates, "the other replica's every publish was a duplicate")
}
