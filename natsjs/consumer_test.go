package natsjs_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/bus"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/natsjs"
	"github.com/passage-of-time/passage/tick"
)

var quiet = slog.New(slog.DiscardHandler)

// minute is the n-th minute after 12:00 on the tests' day.
func minute(n int) time.Time { return time.Date(2026, 11, 26, 12, n, 0, 0, time.UTC) }

// minuteEvent is the boundary a ticker publishes for minute(n).
func minuteEvent(n int) tick.MinuteHasPassed {
	return tick.MinuteHasPassed{Passage: tick.Passage{At: minute(n), Since: minute(n - 1), EmittedAt: minute(n).Add(time.Second)}}
}

// publishMinutes stores minutes from..to on the stream under prefix.
func publishMinutes(t *testing.T, js jetstream.JetStream, prefix string, from, to int) {
	t.Helper()
	pub, err := natsjs.NewPublisher(context.Background(), js, prefix)
	require.NoError(t, err)
	for n := from; n <= to; n++ {
		require.NoError(t, pub.Publish(context.Background(), minuteEvent(n)))
	}
}

// newBus returns a bus closed with the test.
func newBus(t *testing.T) *bus.Bus {
	t.Helper()
	b, err := bus.New(bus.WithLogger(quiet))
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	return b
}

// startConsumer starts a consumer publishing to local, stopped with the
// test.
func startConsumer(t *testing.T, js jetstream.JetStream, prefix, durable string, local tick.Publisher, opts ...natsjs.ConsumerOption) *natsjs.Consumer {
	t.Helper()
	opts = append([]natsjs.ConsumerOption{natsjs.WithLogger(quiet), natsjs.WithRetryBackoff(50*time.Millisecond, 200*time.Millisecond)}, opts...)
	c, err := natsjs.NewConsumer(js, prefix, durable, local, opts...)
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background()))
	t.Cleanup(func() {
		// Bounded: a test that failed may leave a handler blocked.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Stop(ctx)
	})
	return c
}

// waitUntil polls cond until it holds, failing the test after 20 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 20*time.Second, 5*time.Millisecond, "waiting until %s", what)
}

// delivery is what a handler saw of one event.
type delivery struct {
	at        time.Time
	delivered uint64
}

// seenLog records, in order, the minutes a handler was called for.
type seenLog struct {
	mu   sync.Mutex
	seen []delivery
}

func (l *seenLog) handler(ctx context.Context, e tick.MinuteHasPassed) error {
	m, _ := natsjs.MessageFrom(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, delivery{e.At.UTC(), m.Delivered})
	return nil
}

func (l *seenLog) all() []delivery {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]delivery(nil), l.seen...)
}

// effects is a handler's effect table in a test database: a row per call
// that committed, so a minute handled twice shows twice.
// Rows are numbered in the order the calls wrote them.
type effects struct {
	db  *sqlx.DB
	seq *atomic.Int64
}

func newEffects(t *testing.T, db *sqlx.DB) effects {
	t.Helper()
	_, err := db.Exec(`CREATE TABLE effects (seq BIGINT NOT NULL, boundary TEXT NOT NULL)`)
	require.NoError(t, err)
	return effects{db, new(atomic.Int64)}
}

func (e effects) write(ctx context.Context, tx *sqlx.Tx, ev tick.MinuteHasPassed) error {
	_, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO effects (seq, boundary) VALUES (?, ?)`), e.seq.Add(1), ev.At.UTC().Format(time.RFC3339))
	return err
}

func (e effects) rows(t *testing.T) []string {
	t.Helper()
	var got []string
	require.NoError(t, e.db.Select(&got, `SELECT boundary FROM effects ORDER BY seq`))
	return got
}

func (e effects) count(t *testing.T) int { return len(e.rows(t)) }

// minutes lists minutes from..to as the effects table writes them.
func minutes(from, to int) []string {
	var s []string
	for n := from; n <= to; n++ {
		s = append(s, minute(n).Format(time.RFC3339))
	}
	return s
}

func TestAConsumerAnHourBehindCatchesUpInOrder(t *testing.T) {
	t.Parallel()
	url := serverURL(t)
	n := unique(t)
	_, js := connect(t, url)
	ensure(t, js, n)
	b := newBus(t)
	var seen seenLog
	_, err := bus.Subscribe(b, seen.handler)
	require.NoError(t, err)

	publishMinutes(t, js, n.prefix, 1, 5)
	c := startConsumer(t, js, n.prefix, "orders", b)
	waitUntil(t, "the first five minutes are handled", func() bool { return c.Stats().Handled == 5 })
	require.NoError(t, c.Stop(context.Background()))

	// The service is down for an hour.
	publishMinutes(t, js, n.prefix, 6, 65)
	c = startConsumer(t, js, n.prefix, "orders", b)
	waitUntil(t, "the hour is caught up", func() bool { return c.Stats().Handled == 60 })

	var want []delivery
	for i := 1; i <= 65; i++ {
		want = append(want, delivery{minute(i), 1})
	}
	require.Equal(t, want, seen.all(), "every minute once, in order, from where the durable consumer stood")
}

func TestAFailedHandlerIsRedeliveredAndHandledOnce(t *testing.T) {
	t.Parallel()
	url := serverURL(t)
	for _, backend := range sqldbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			t.Parallel()
			n := unique(t)
			_, js := connect(t, url)
			ensure(t, js, n)
			db, _ := backend.Open(t)
			fx := newEffects(t, db.DB)
			inbox, err := natsjs.OpenInbox(context.Background(), db.DB)
			require.NoError(t, err)

			var mu sync.Mutex
			calls := map[time.Time][]uint64{}
			failed := false
			handler, err := natsjs.Once(inbox, "orders", func(ctx context.Context, tx *sqlx.Tx, e tick.MinuteHasPassed) error {
				m, _ := natsjs.MessageFrom(ctx)
				mu.Lock()
				calls[e.At.UTC()] = append(calls[e.At.UTC()], m.Delivered)
				fail := e.At.Equal(minute(2)) && !failed
				failed = failed || fail
				mu.Unlock()
				if err := fx.write(ctx, tx, e); err != nil {
					return err
				}
				if fail {
					return errors.New("the database of a downstream service is away")
				}
				return nil
			})
			require.NoError(t, err)
			b := newBus(t)
			_, err = bus.Subscribe(b, handler)
			require.NoError(t, err)

			publishMinutes(t, js, n.prefix, 1, 3)
			c := startConsumer(t, js, n.prefix, "orders", b)
			waitUntil(t, "three minutes are handled", func() bool { return c.Stats().Handled == 3 })

			require.Equal(t, minutes(1, 3), fx.rows(t), "each minute's effect once, in order: the failed call's was rolled back")
			mu.Lock()
			defer mu.Unlock()
			require.Equal(t, map[time.Time][]uint64{minute(1): {1}, minute(2): {1, 2}, minute(3): {1}}, calls)
			require.EqualValues(t, 1, c.Stats().Failed)
		})
	}
}

// A consumer that dies after its handler's transaction committed but
// before its ack: the server delivers the message again to the next
// consumer of the same durable name, whose inbox turns it away.
func TestAConsumerKilledBeforeItsAckIsTurnedAwayByTheInbox(t *testing.T) {
	t.Parallel()
	url := serverURL(t)
	for _, backend := range sqldbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			t.Parallel()
			n := unique(t)
			_, js := connect(t, url)
			ensure(t, js, n)
			db, _ := backend.Open(t)
			fx := newEffects(t, db.DB)
			inbox, err := natsjs.OpenInbox(context.Background(), db.DB)
			require.NoError(t, err)
			once, err := natsjs.Once(inbox, "orders", fx.write)
			require.NoError(t, err)

			// The first process: its connection dies right after the
			// handler committed minute 1, before the consumer acks it.
			doomed, doomedJS := connect(t, url)
			first := newBus(t)
			_, err = bus.Subscribe(first, once)
			require.NoError(t, err)
			_, err = bus.Subscribe(first, func(context.Context, tick.MinuteHasPassed) error {
				doomed.Close()
				return nil
			})
			require.NoError(t, err)
			publishMinutes(t, js, n.prefix, 1, 1)
			c1 := startConsumer(t, doomedJS, n.prefix, "orders", first, natsjs.WithAckWait(300*time.Millisecond))
			waitUntil(t, "the first consumer's ack fails", func() bool { return c1.Stats().AckFailures == 1 })
			require.Equal(t, minutes(1, 1), fx.rows(t), "the handler committed")

			// The next process, on its own connection, same durable name.
			second := newBus(t)
			_, err = bus.Subscribe(second, once)
			require.NoError(t, err)
			var seen seenLog
			_, err = bus.Subscribe(second, seen.handler)
			require.NoError(t, err)
			c2 := startConsumer(t, js, n.prefix, "orders", second, natsjs.WithAckWait(300*time.Millisecond))
			publishMinutes(t, js, n.prefix, 2, 3)
			waitUntil(t, "the next consumer handles all three", func() bool { return c2.Stats().Handled == 3 })

			require.Equal(t, []delivery{{minute(1), 2}, {minute(2), 1}, {minute(3), 1}}, seen.all(), "minute 1 came back")
			require.Equal(t, minutes(1, 3), fx.rows(t), "minute 1's effect once")
			handled, err := inbox.Handled(context.Background(), "orders", minuteEvent(1).ID())
			require.NoError(t, err)
			require.True(t, handled)
		})
	}
}

// A handler that runs for longer than the ack wait keeps its message: a
// second replica of the service, waiting on the same durable consumer,
// is not given it meanwhile.
func TestASlowHandlerKeepsItsMessage(t *testing.T) {
	t.Parallel()
	url := serverURL(t)
	n := unique(t)
	_, js := connect(t, url)
	ensure(t, js, n)
	var seen seenLog
	release := make(chan struct{})
	slow := func(ctx context.Context, e tick.MinuteHasPassed) error {
		_ = seen.handler(ctx, e)
		<-release
		return nil
	}
	publishMinutes(t, js, n.prefix, 1, 2)
	const ackWait = 300 * time.Millisecond
	var replicas []*natsjs.Consumer
	for range 2 {
		_, js := connect(t, url)
		b := newBus(t)
		_, err := bus.Subscribe(b, slow)
		require.NoError(t, err)
		replicas = append(replicas, startConsumer(t, js, n.prefix, "orders", b, natsjs.WithAckWait(ackWait)))
	}
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) }) // before the replicas stop
	stats := func() (s natsjs.ConsumerStats) {
		for _, c := range replicas {
			s.Handled += c.Stats().Handled
			s.InProgress += c.Stats().InProgress
		}
		return s
	}

	// Fifteen in-progress acks, one every third of the ack wait: the
	// handler has held minute 1 for five ack waits.
	waitUntil(t, "the handler has run for five ack waits", func() bool { return stats().InProgress >= 15 })
	require.Equal(t, []delivery{{minute(1), 1}}, seen.all(), "the other replica was not given minute 1")
	releaseOnce.Do(func() { close(release) })
	waitUntil(t, "both minutes are handled", func() bool { return stats().Handled == 2 })

	require.Equal(t, []delivery{{minute(1), 1}, {minute(2), 1}}, seen.all(), "nothing delivered twice")
	cons, err := js.Consumer(context.Background(), n.stream, "orders")
	require.NoError(t, err)
	info, err := cons.Info(context.Background())
	require.NoError(t, err)
	require.Zero(t, info.NumRedelivered)
	require.Zero(t, info.NumAckPending)
}
