package natsjs_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/bus"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/natsjs"
)

// The server is killed (as kill -9 does) and started again while
// boundaries are published and consumed: the publisher retries until the
// server acks, the consumer takes up where its durable consumer stood,
// and the handler's effect holds every minute exactly once, in order.
func TestAServerRestartMidStreamLosesAndDuplicatesNothing(t *testing.T) {
	t.Parallel()
	srv := startChild(t)
	n := unique(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reconnecting := []nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(20 * time.Millisecond)}
	pubConn, _ := connect(t, srv.url(), reconnecting...)
	pubJS, err := jetstream.New(pubConn, jetstream.WithDefaultTimeout(time.Second))
	require.NoError(t, err)
	_, err = natsjs.EnsureStream(ctx, pubJS, n.stream, n.prefix) // file storage
	require.NoError(t, err)
	pub, err := natsjs.NewPublisher(ctx, pubJS, n.prefix)
	require.NoError(t, err)

	db, _ := sqldbtest.SQLite(t)
	fx := newEffects(t, db.DB)
	inbox, err := natsjs.OpenInbox(ctx, db.DB)
	require.NoError(t, err)
	once, err := natsjs.Once(inbox, "orders", fx.write)
	require.NoError(t, err)
	b := newBus(t)
	_, err = bus.Subscribe(b, once)
	require.NoError(t, err)
	_, consJS := connect(t, srv.url(), reconnecting...)
	c := startConsumer(t, consJS, n.prefix, "orders", b, natsjs.WithAckWait(500*time.Millisecond))

	const total = 40
	var wg sync.WaitGroup
	publish := func(from, to int) {
		defer wg.Done()
		for i := from; i <= to; i++ {
			// As the ticker does: the same boundary again until stored.
			for pub.Publish(ctx, minuteEvent(i)) != nil {
				if ctx.Err() != nil {
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	wg.Add(1)
	publish(1, total/2)
	waitUntil(t, "the consumer is a few minutes in", func() bool { return fx.count(t) >= 5 })

	srv.kill()
	wg.Add(1)
	go publish(total/2+1, total)
	srv.start()
	waitUntil(t, "every minute is handled", func() bool { return fx.count(t) >= total })
	wg.Wait()

	require.Equal(t, minutes(1, total), fx.rows(t), "every minute once, in order")
	stats := c.Stats()
	// A killed server forgets the acks it had not yet written to its
	// store: it delivers those messages again, and the inbox turns them
	// away (Handled counts them twice).
	require.GreaterOrEqual(t, stats.Handled, int64(total))
	t.Logf("consumer %+v, publisher %+v", stats, pub.Stats())
}
