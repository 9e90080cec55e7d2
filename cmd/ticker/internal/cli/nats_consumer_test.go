package cli_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/bus"
	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
	"github.com/passage-of-time/passage/natsjs"
	"github.com/passage-of-time/passage/tick"
)

// One source of time that every service reacts to (issue 29): what
// "ticker run --nats" publishes, a natsjs.Consumer of the same prefix
// reads back as typed events on a service's local bus. Each committed
// minute reaches a tick.MinuteHasPassed handler once, in order, carrying
// its boundary, previous boundary and emission time; the minutes a
// catch-up left out arrive as a tick.TicksSkipped; the schedule's runs
// on the same stream are passed by, none terminated as undecodable.
func TestANATSConsumerReadsWhatRunPublishesAsTypedTime(t *testing.T) {
	t.Parallel()
	url := natsURL(t)
	for engine, db := range databases(t) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			js := jsOf(t, url)
			prefix, stream := natsPrefix(t, js)
			clock := clockwork.NewFakeClockAt(start) // 12:00:30 UTC
			ok(t, run(t, clock, nil, "schedule", "add", "--db", db, "--name", "poll", "--spec", "@every 2m", "--command", "poll"))
			r := startRun(t, clock, "--db", db, "--units", "minute", "--catch-up", "minute=latest", "--nats", url, "--nats-prefix", prefix)
			c, heard := consumeTime(t, js, prefix)

			// 12:01 and 12:02 one at a time; then three minutes at once,
			// of which latest-only emits 12:05 and reports 12:03 and
			// 12:04 skipped; then 12:06.
			for _, d := range []time.Duration{time.Minute, time.Minute, 3 * time.Minute, time.Minute} {
				require.NoError(t, tick.AdvanceAndWait(ctx, clock, d, r.ticker))
			}
			// The oracle, from the clock alone: each pass runs 30 s
			// after its boundary; 12:05's previous is the boundary the
			// cursor stood on, 12:02 (tick.Passage.Since: the skipped
			// ones lie between).
			at := func(m int) time.Time { return time.Date(2026, 11, 21, 12, m, 0, 0, time.UTC) }
			wantMinutes := []struct{ at, since time.Time }{
				{at(1), at(0)}, {at(2), at(1)}, {at(5), at(2)}, {at(6), at(5)},
			}
			require.Eventually(t, func() bool { m, s := heard.received(); return m >= len(wantMinutes) && s >= 1 },
				10*time.Second, 5*time.Millisecond, "the minutes and the skip report on the service's bus: %s", r.stderr)
			require.Equal(t, cli.ExitOK, r.stop(), r.stderr.String())

			// The consumer has read all the stream holds — the runs
			// among it — once nothing is pending or unacked.
			cons, err := js.Consumer(ctx, stream, "orders")
			require.NoError(t, err)
			require.Eventually(t, func() bool {
				info, err := cons.Info(ctx)
				return err == nil && info.NumPending == 0 && info.NumAckPending == 0
			}, 10*time.Second, 5*time.Millisecond, "the consumer through the stream")
			var runs int
			for _, m := range streamMsgs(t, js, stream) {
				if m.Subject == prefix+".schedule.poll" {
					runs++
				}
			}
			require.Positive(t, runs, "runs on the stream for the consumer to pass by")

			heard.mu.Lock()
			defer heard.mu.Unlock()
			minutes, skips := heard.minutes, heard.skips
			require.Len(t, minutes, len(wantMinutes), "each committed minute once")
			for i, w := range wantMinutes {
				got := minutes[i]
				require.True(t, got.At.Equal(w.at), "minute %d: %v, want %v", i, got.At, w.at)
				require.True(t, got.Since.Equal(w.since), "minute %d's previous: %v, want %v", i, got.Since, w.since)
				require.True(t, got.EmittedAt.Equal(w.at.Add(30*time.Second)), "minute %d emitted at %v", i, got.EmittedAt)
			}
			require.Len(t, skips, 1)
			require.Equal(t, tick.Minute, skips[0].Unit)
			require.True(t, skips[0].From.Equal(at(3)) && skips[0].To.Equal(at(4)), "skipped %v..%v, want 12:03..12:04", skips[0].From, skips[0].To)
			require.EqualValues(t, 2, skips[0].Count)
			require.Equal(t, "latest-only", skips[0].Policy)
			stats := c.Stats()
			require.EqualValues(t, len(wantMinutes)+1, stats.Handled, "%+v", stats)
			require.Zero(t, stats.Terminated, "nothing undecodable: the runs passed by")
			require.Zero(t, stats.Failed)
		})
	}
}

// timeHeard is what a service's handlers heard of time: the minutes and
// the skip reports, under mu.
type timeHeard struct {
	mu      sync.Mutex
	minutes []tick.MinuteHasPassed
	skips   []tick.TicksSkipped
}

// received returns how many minutes and skip reports were heard.
func (h *timeHeard) received() (int, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.minutes), len(h.skips)
}

// consumeTime starts the service: no ticker, a bus whose handlers record
// what they hear, and a durable consumer "orders" of prefix feeding it;
// the consumer is stopped, then the bus closed, when the test ends.
func consumeTime(t *testing.T, js jetstream.JetStream, prefix string) (*natsjs.Consumer, *timeHeard) {
	t.Helper()
	ctx := context.Background()
	b, err := bus.New(bus.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close(ctx)) })
	heard := &timeHeard{}
	_, err = bus.Subscribe(b, func(_ context.Context, e tick.MinuteHasPassed) error {
		heard.mu.Lock()
		defer heard.mu.Unlock()
		heard.minutes = append(heard.minutes, e)
		return nil
	})
	require.NoError(t, err)
	_, err = bus.Subscribe(b, func(_ context.Context, e tick.TicksSkipped) error {
		heard.mu.Lock()
		defer heard.mu.Unlock()
		heard.skips = append(heard.skips, e)
		return nil
	})
	require.NoError(t, err)
	c, err := natsjs.NewConsumer(js, prefix, "orders", b, natsjs.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	t.Cleanup(func() { require.NoError(t, c.Stop(ctx)) })
	return c, heard
}
