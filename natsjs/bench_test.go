package natsjs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/passage-of-time/passage/eventstore"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/natsjs"
	"github.com/passage-of-time/passage/outbox"
	"github.com/passage-of-time/passage/tick"
)

// The benchmarks run against the server in PASSAGE_TEST_NATS, each beside
// a floor measured in the same run on a stream of the same kind (file
// storage, the default duplicate window): raw jetstream publishes of the
// same bodies under the same Nats-Msg-Id.

// benchStream creates a stream of a benchmark's own, deleted at its end.
func benchStream(b *testing.B, js jetstream.JetStream) names {
	b.Helper()
	n := unique(b)
	if _, err := natsjs.EnsureStream(context.Background(), js, n.stream, n.prefix); err != nil {
		b.Fatal(err)
	}
	deleteWithTest(b, js, n.stream)
	return n
}

// benchMinute is the i-th boundary of the benchmarks: distinct ids, so
// nothing is de-duplicated.
func benchMinute(i int) tick.MinuteHasPassed {
	at := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute)
	return tick.MinuteHasPassed{Passage: tick.Passage{At: at, Since: at.Add(-time.Minute), EmittedAt: at.Add(time.Millisecond)}}
}

// publishAsync stores msgs with PublishMsgAsync and waits for every ack:
// the floor, JetStream's fastest way to store them.
func publishAsync(b *testing.B, js jetstream.JetStream, msgs []*nats.Msg) {
	b.Helper()
	futures := make([]jetstream.PubAckFuture, len(msgs))
	for i, m := range msgs {
		f, err := js.PublishMsgAsync(m)
		if err != nil {
			b.Fatal(err)
		}
		futures[i] = f
	}
	for i, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			b.Fatalf("message %d: %v", i, err)
		case <-time.After(30 * time.Second):
			b.Fatalf("message %d: no ack in 30 s", i)
		}
	}
}

// BenchmarkBoundaries: boundaries stored per second through a Publisher
// (what a ticker catching up does: one Publish, one ack waited for, per
// boundary), against raw PublishMsgAsync of the same bodies and ids (all
// sent, then every ack awaited) and raw PublishMsg (one ack at a time,
// the Publisher's own guarantee without passage).
func BenchmarkBoundaries(b *testing.B) {
	url := serverURL(b)
	_, js := connect(b, url)
	ctx := context.Background()
	events := make([]tick.MinuteHasPassed, b.N)
	floorMsgs := make([]*nats.Msg, b.N)
	syncMsgs := make([]*nats.Msg, b.N)
	async, sync := benchStream(b, js), benchStream(b, js)
	for i := range events {
		events[i] = benchMinute(i)
		body, err := json.Marshal(events[i])
		if err != nil {
			b.Fatal(err)
		}
		for _, m := range []struct {
			to  []*nats.Msg
			pre string
		}{{floorMsgs, async.prefix}, {syncMsgs, sync.prefix}} {
			msg := nats.NewMsg(m.pre + ".minute")
			msg.Data = body
			msg.Header.Set(jetstream.MsgIDHeader, events[i].ID())
			m.to[i] = msg
		}
	}
	n := benchStream(b, js)
	pub, err := natsjs.NewPublisher(ctx, js, n.prefix)
	if err != nil {
		b.Fatal(err)
	}

	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		if err := pub.Publish(ctx, events[i]); err != nil {
			b.Fatal(err)
		}
	}
	took := time.Since(start)
	b.StopTimer()
	if s := pub.Stats(); s.Stored != int64(b.N) {
		b.Fatalf("stored %d of %d", s.Stored, b.N)
	}
	start = time.Now()
	publishAsync(b, js, floorMsgs)
	floor := time.Since(start)
	start = time.Now()
	for _, m := range syncMsgs {
		if _, err := js.PublishMsg(ctx, m); err != nil {
			b.Fatal(err)
		}
	}
	floorSync := time.Since(start)
	b.ReportMetric(float64(b.N)/took.Seconds(), "boundaries/s")
	b.ReportMetric(float64(b.N)/floor.Seconds(), "floor-async/s")
	b.ReportMetric(float64(b.N)/floorSync.Seconds(), "floor-sync/s")
	b.ReportMetric(took.Seconds()/floor.Seconds(), "x-floor-async")
	b.ReportMetric(took.Seconds()/floorSync.Seconds(), "x-floor-sync")
}

// benchEvent is the stored events' event.
type benchEvent struct {
	Order string
	N     int
}

// eventsBench is an event store whose appends go to an outbox, on one
// backend, and a sink publishing them on a stream of the benchmark's own.
type eventsBench struct {
	store *eventstore.Store
	ob    *outbox.Outbox
	sink  *natsjs.EventSink
	js    jetstream.JetStream
	names names
}

func newEventsBench(b *testing.B, backend sqldbtest.Backend) *eventsBench {
	b.Helper()
	ctx := context.Background()
	_, js := connect(b, serverURL(b))
	n := benchStream(b, js)
	db, _ := backend.Open(b)
	ob, err := outbox.Open(ctx, db.DB)
	if err != nil {
		b.Fatal(err)
	}
	reg := eventstore.NewRegistry()
	if err := eventstore.Register[benchEvent](reg, "orders.placed"); err != nil {
		b.Fatal(err)
	}
	store, err := eventstore.Open(ctx, db.DB, reg, eventstore.WithInTransaction(natsjs.RecordEvents(ob)))
	if err != nil {
		b.Fatal(err)
	}
	sink, err := natsjs.NewEventSink(ctx, js, n.prefix)
	if err != nil {
		b.Fatal(err)
	}
	return &eventsBench{store: store, ob: ob, sink: sink, js: js, names: n}
}

// relay starts the sink's relay, stopped at the benchmark's end.
func (e *eventsBench) relay(b *testing.B, poll time.Duration) *outbox.Relay {
	b.Helper()
	r, err := outbox.NewRelay(e.ob, "nats", e.sink.Deliver, outbox.WithPoll(poll),
		outbox.WithFrom(outbox.FromBeginning)) // events are appended before it starts
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = r.Run(ctx, func(err error) { b.Errorf("relay: %v", err) })
	}()
	b.Cleanup(func() {
		cancel()
		<-done
	})
	return r
}

// streams is how many eventstore streams the stored-events benchmark
// spreads its events over: the relay publishes one stream's in order, 16
// streams at a time.
const streams = 16

// BenchmarkStoredEvents: events appended (each in its own transaction,
// before the clock starts) and then published by a relay through an
// EventSink — read from the outbox after the commits, one ack waited for
// per event, its checkpoint moved — per second, against raw
// PublishMsgAsync of the same bodies under the same ids.
func BenchmarkStoredEvents(b *testing.B) {
	for _, backend := range sqldbtest.Backends() {
		b.Run(backend.Name, func(b *testing.B) {
			e := newEventsBench(b, backend)
			ctx := context.Background()
			floor := benchStream(b, e.js)
			floorMsgs := make([]*nats.Msg, b.N)
			for i := range b.N {
				ev := benchEvent{Order: fmt.Sprintf("order-%d", i%streams), N: i}
				res, err := e.store.Append(ctx, ev.Order, eventstore.Any, ev)
				if err != nil {
					b.Fatal(err)
				}
				body, err := json.Marshal(ev)
				if err != nil {
					b.Fatal(err)
				}
				msg := nats.NewMsg(floor.prefix + ".orders.placed")
				msg.Data = body
				msg.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("%s/%d", ev.Order, res.Recorded[0].Version))
				floorMsgs[i] = msg
			}
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			r := e.relay(b, 10*time.Millisecond)
			r.Notify()
			for e.sink.Stats().Stored < int64(b.N) {
				time.Sleep(time.Millisecond)
			}
			took := time.Since(start)
			b.StopTimer()
			start = time.Now()
			publishAsync(b, e.js, floorMsgs)
			floorTook := time.Since(start)
			b.ReportMetric(float64(b.N)/took.Seconds(), "events/s")
			b.ReportMetric(float64(b.N)/floorTook.Seconds(), "floor-async/s")
			b.ReportMetric(took.Seconds()/floorTook.Seconds(), "x-floor-async")
		})
	}
}

// remoteHandler is a consumer on the other side of the stream: a durable
// pull consumer of the subjects under prefix whose handler acks each
// message and reports when it got it.
func remoteHandler(b *testing.B, js jetstream.JetStream, n names) <-chan time.Time {
	b.Helper()
	ctx := context.Background()
	s, err := js.Stream(ctx, n.stream)
	if err != nil {
		b.Fatal(err)
	}
	cons, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:       "remote",
		FilterSubject: n.prefix + ".>",
		AckPolicy:     jetstream.AckExplicitPolicy,
	})
	if err != nil {
		b.Fatal(err)
	}
	got := make(chan time.Time, 1)
	cc, err := cons.Consume(func(msg jetstream.Msg) {
		at := time.Now()
		_ = msg.Ack()
		got <- at
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cc.Stop)
	return got
}

// BenchmarkAppendToRemoteHandler: latency from an eventstore append to a
// handler on the other side of JetStream, one event at a time (the
// append commits, the relay is notified, reads it, publishes it, the
// server acks and delivers it to a durable consumer), p50 and p99;
// against a raw publish (PublishMsg, its ack awaited) of the same body to
// the same kind of consumer.
func BenchmarkAppendToRemoteHandler(b *testing.B) {
	for _, backend := range sqldbtest.Backends() {
		// The relay is notified after each append, and reads at once
		// what committed; on PostgreSQL it reads only up to the oldest
		// transaction still open in the cluster (pg_snapshot_xmin), so
		// an event that commits while an older transaction runs waits
		// for the relay's next poll: 10 ms, or the default second.
		for _, poll := range []time.Duration{10 * time.Millisecond, time.Second} {
			b.Run(fmt.Sprintf("%s/poll=%v", backend.Name, poll), func(b *testing.B) {
				appendToRemoteHandler(b, backend, poll)
			})
		}
	}
}

func appendToRemoteHandler(b *testing.B, backend sqldbtest.Backend, poll time.Duration) {
	e := newEventsBench(b, backend)
	ctx := context.Background()
	got := remoteHandler(b, e.js, e.names)
	r := e.relay(b, poll)
	floor := benchStream(b, e.js)
	floorGot := remoteHandler(b, e.js, floor)
	lat := make([]time.Duration, b.N)
	floorLat := make([]time.Duration, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		ev := benchEvent{Order: "order-1", N: i}
		start := time.Now()
		if _, err := e.store.Append(ctx, ev.Order, eventstore.Any, ev); err != nil {
			b.Fatal(err)
		}
		r.Notify()
		lat[i] = waitFor(b, got).Sub(start)
	}
	b.StopTimer()
	for i := range b.N {
		body, err := json.Marshal(benchEvent{Order: "order-1", N: i})
		if err != nil {
			b.Fatal(err)
		}
		msg := nats.NewMsg(floor.prefix + ".orders.placed")
		msg.Data = body
		msg.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("order-1/%d", i+1))
		start := time.Now()
		if _, err := e.js.PublishMsg(ctx, msg); err != nil {
			b.Fatal(err)
		}
		floorLat[i] = waitFor(b, floorGot).Sub(start)
	}
	p50, p99 := percentiles(lat)
	f50, f99 := percentiles(floorLat)
	b.ReportMetric(ms(p50), "p50-ms")
	b.ReportMetric(ms(p99), "p99-ms")
	b.ReportMetric(ms(f50), "floor-p50-ms")
	b.ReportMetric(ms(f99), "floor-p99-ms")
	b.ReportMetric(float64(p50)/float64(f50), "x-floor-p50")
}

// waitFor returns the time the remote handler got the next message.
func waitFor(b *testing.B, got <-chan time.Time) time.Time {
	b.Helper()
	select {
	case at := <-got:
		return at
	case <-time.After(30 * time.Second):
		b.Fatal("the remote handler got nothing in 30 s")
		return time.Time{}
	}
}

// percentiles returns the median and the 99th percentile of d.
func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2], s[min(len(s)-1, len(s)*99/100)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
