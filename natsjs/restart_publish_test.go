package natsjs_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/natsjs"
	"github.com/passage-of-time/passage/tick"
)

// The ticker's cursor moves only past boundaries the server acknowledged:
// with the server down the minute's publish fails and the cursor stays;
// once it is back the retry stores the minute, once, even though the
// failed attempt's message, buffered by the client, may reach the server
// too on reconnecting.
func TestTheCursorMovesOnlyPastStoredBoundaries(t *testing.T) {
	t.Parallel()
	srv := startChild(t)
	n := unique(t)
	ctx := context.Background()
	reconnected := make(chan struct{}, 1)
	nc, err := nats.Connect(srv.url(), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond),
		nats.ReconnectHandler(func(*nats.Conn) { reconnected <- struct{}{} }))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(time.Second))
	require.NoError(t, err)
	_, err = natsjs.EnsureStream(ctx, js, n.stream, n.prefix)
	require.NoError(t, err)
	pub, err := natsjs.NewPublisher(ctx, js, n.prefix)
	require.NoError(t, err)

	start := time.Date(2026, 11, 26, 12, 0, 30, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(start)
	store := tick.NewMemoryStore()
	ticker, err := tick.New(pub, store, tick.WithClock(clock), tick.WithUnits(tick.Minute),
		tick.WithRetryBackoff(time.Second, time.Second), tick.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	require.NoError(t, ticker.Start(ctx))
	t.Cleanup(func() { _ = ticker.Stop(context.Background()) })
	require.NoError(t, tick.AdvanceAndWait(ctx, clock, time.Minute, ticker)) // 12:01 stored

	srv.kill()
	require.NoError(t, tick.AdvanceAndWait(ctx, clock, time.Minute, ticker)) // 12:02 fails
	require.EqualValues(t, 1, ticker.Stats().PublishFailures)
	cursor, err := store.Cursor(ctx, tick.Minute)
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 11, 26, 12, 1, 0, 0, time.UTC), cursor.UTC(), "the cursor stays on the last stored minute")

	srv.start()
	select {
	case <-reconnected:
	case <-time.After(10 * time.Second):
		t.Fatal("the client did not reconnect within 10 s")
	}
	require.NoError(t, tick.AdvanceAndWait(ctx, clock, time.Second, ticker)) // the retry
	cursor, err = store.Cursor(ctx, tick.Minute)
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 11, 26, 12, 2, 0, 0, time.UTC), cursor.UTC())
	require.NoError(t, tick.AdvanceAndWait(ctx, clock, time.Minute, ticker)) // 12:03

	var got []time.Time
	for _, m := range stored(t, js, n.stream) {
		p := passageIn(t, m.Data)
		got = append(got, p.At.UTC())
	}
	require.Equal(t, []time.Time{
		time.Date(2026, 11, 26, 12, 1, 0, 0, time.UTC),
		time.Date(2026, 11, 26, 12, 2, 0, 0, time.UTC),
		time.Date(2026, 11, 26, 12, 3, 0, 0, time.UTC),
	}, got, "each minute stored once, in order")
	t.Logf("publisher: %+v", pub.Stats())
}
