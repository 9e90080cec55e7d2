package natsjs_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/bus"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/natsjs"
	"github.com/passage-of-time/passage/tick"
)

// A skip report comes out of the stream as the tick.TicksSkipped it went
// in as; a message that is no event is terminated, and the stream goes on.
func TestAConsumerRepublishesSkipReportsAndTerminatesWhatItCannotDecode(t *testing.T) {
	t.Parallel()
	url := serverURL(t)
	n := unique(t)
	ctx := context.Background()
	_, js := connect(t, url)
	ensure(t, js, n)
	pub, err := natsjs.NewPublisher(ctx, js, n.prefix)
	require.NoError(t, err)

	skipped := tick.TicksSkipped{Unit: tick.Minute, From: minute(1), To: minute(4), Count: 4, Policy: "latest-only", EmittedAt: minute(5)}
	require.NoError(t, pub.Publish(ctx, skipped))
	garbage := nats.NewMsg(n.prefix + ".minute")
	garbage.Data = []byte("not an event")
	_, err = js.PublishMsg(ctx, garbage)
	require.NoError(t, err)
	require.NoError(t, pub.Publish(ctx, minuteEvent(5)))

	b := newBus(t)
	var mu sync.Mutex
	var got []any
	record := func(_ context.Context, e any) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, e)
		return nil
	}
	_, err = bus.Subscribe(b, func(ctx context.Context, e tick.TicksSkipped) error { return record(ctx, e) })
	require.NoError(t, err)
	_, err = bus.Subscribe(b, func(ctx context.Context, e tick.MinuteHasPassed) error { return record(ctx, e) })
	require.NoError(t, err)
	c := startConsumer(t, js, n.prefix, "orders", b)
	waitUntil(t, "the minute after the garbage is handled", func() bool { return c.Stats().Handled == 2 })

	require.EqualValues(t, 1, c.Stats().Terminated)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 2)
	back, ok := got[0].(tick.TicksSkipped)
	require.True(t, ok, "%T", got[0])
	require.True(t, back.From.Equal(skipped.From) && back.To.Equal(skipped.To))
	require.Equal(t, skipped.Count, back.Count)
	require.Equal(t, minute(5), got[1].(tick.MinuteHasPassed).At.UTC())
}

func TestAConsumerWithoutAStreamIsAnErrorAtStart(t *testing.T) {
	t.Parallel()
	url := serverURL(t)
	_, js := connect(t, url)
	c, err := natsjs.NewConsumer(js, unique(t).prefix, "orders", newBus(t))
	require.NoError(t, err)
	err = c.Start(context.Background())
	require.ErrorIs(t, err, natsjs.ErrNoStream)
	require.NoError(t, c.Stop(context.Background()), "stopping a consumer that never started is harmless")

	for _, durable := range []string{"", "a.b", "a b", "a*", "a>"} {
		_, err := natsjs.NewConsumer(js, "passage.time", durable, newBus(t))
		require.ErrorIs(t, err, natsjs.ErrInvalidOption, "durable %q", durable)
	}
	_, err = natsjs.NewConsumer(js, "passage.time", "orders", nil)
	require.ErrorIs(t, err, natsjs.ErrInvalidOption)
	_, err = natsjs.NewConsumer(js, "passage.time", "orders", newBus(t), natsjs.WithAckWait(time.Millisecond))
	require.ErrorIs(t, err, natsjs.ErrInvalidOption)
}

// Once also serves events published on the bus by a local ticker (their
// own ID is their message id), and refuses events that have neither.
func TestOnceOutsideAConsumer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := sqldbtest.SQLite(t)
	fx := newEffects(t, db.DB)
	clock := clockwork.NewFakeClockAt(minute(1))
	inbox, err := natsjs.OpenInbox(ctx, db.DB, natsjs.WithInboxClock(clock))
	require.NoError(t, err)
	once, err := natsjs.Once(inbox, "orders", fx.write)
	require.NoError(t, err)
	require.NoError(t, once(ctx, minuteEvent(1)))
	require.NoError(t, once(ctx, minuteEvent(1)))
	require.Equal(t, minutes(1, 1), fx.rows(t))

	// Forgotten, the message would run again: Forget only what cannot
	// come back.
	forgot, err := inbox.Forget(ctx, "orders", minute(1))
	require.NoError(t, err)
	require.Zero(t, forgot, "handled at 12:01, not before")
	forgot, err = inbox.Forget(ctx, "orders", minute(2))
	require.NoError(t, err)
	require.EqualValues(t, 1, forgot)
	handled, err := inbox.Handled(ctx, "orders", minuteEvent(1).ID())
	require.NoError(t, err)
	require.False(t, handled)

	type untitled struct{}
	h, err := natsjs.Once(inbox, "orders", func(context.Context, *sqlx.Tx, untitled) error { return nil })
	require.NoError(t, err)
	require.ErrorIs(t, h(ctx, untitled{}), natsjs.ErrNoMessageID)
}
