package natsjs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/eventstore"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/natsjs"
	"github.com/passage-of-time/passage/outbox"
)

// OrderPlaced is the events tests' event.
type OrderPlaced struct {
	Order string
	N     int
}

// eventsOut is a store whose appends are recorded in an outbox, and a
// sink publishing them under a test's prefix.
type eventsOut struct {
	db     *sqldb.DB
	store  *eventstore.Store
	outbox *outbox.Outbox
	sink   *natsjs.EventSink
	js     jetstream.JetStream
	names  names
}

func newEventsOut(t *testing.T, backend sqldbtest.Backend) *eventsOut {
	t.Helper()
	ctx := context.Background()
	url := serverURL(t)
	n := unique(t)
	n.prefix = "passagetest." + n.stream[len("PASSAGE_TEST_"):] + ".events"
	_, js := connect(t, url)
	ensure(t, js, n)
	db, _ := backend.Open(t)
	ob, err := outbox.Open(ctx, db.DB)
	require.NoError(t, err)
	reg := eventstore.NewRegistry()
	require.NoError(t, eventstore.Register[OrderPlaced](reg, "orders.placed"))
	store, err := eventstore.Open(ctx, db.DB, reg, eventstore.WithInTransaction(natsjs.RecordEvents(ob)))
	require.NoError(t, err)
	sink, err := natsjs.NewEventSink(ctx, js, n.prefix)
	require.NoError(t, err)
	return &eventsOut{db: db, store: store, outbox: ob, sink: sink, js: js, names: n}
}

// relay returns a relay of the sink "nats" (its checkpoint is the sink's,
// so a new relay goes on where the last one stopped).
func (e *eventsOut) relay(t *testing.T, deliver outbox.Deliver) *outbox.Relay {
	t.Helper()
	r, err := outbox.NewRelay(e.outbox, "nats", deliver, outbox.WithPoll(10*time.Millisecond),
		outbox.WithBackoff(time.Millisecond, 10*time.Millisecond), outbox.WithParallel(4),
		outbox.WithFrom(outbox.FromBeginning)) // the tests append before the relay starts
	require.NoError(t, err)
	return r
}

// published reads the events stored on the JetStream stream, per
// eventstore stream, in stream order.
func (e *eventsOut) published(t *testing.T) (perStream map[string][]int64, total int, badIDs []string) {
	t.Helper()
	perStream = map[string][]int64{}
	for _, m := range stored(t, e.js, e.names.stream) {
		require.Equal(t, e.names.prefix+".orders.placed", m.Subject)
		stream := m.Header.Get(natsjs.HeaderStream)
		v, err := strconv.ParseInt(m.Header.Get(natsjs.HeaderVersion), 10, 64)
		require.NoError(t, err)
		if id := m.Header.Get(jetstream.MsgIDHeader); id != fmt.Sprintf("%s/%d", stream, v) {
			badIDs = append(badIDs, id)
		}
		// The same event as a CloudEvent in the binding's binary mode:
		// the body its data, its attributes in ce- headers.
		ce := fmt.Sprintf("%s %s %s %s %s %s", m.Header.Get("ce-specversion"), m.Header.Get("ce-id"), m.Header.Get("ce-source"),
			m.Header.Get("ce-type"), m.Header.Get("ce-subject"), m.Header.Get("ce-datacontenttype"))
		if want := fmt.Sprintf("1.0 %s/%d /passage/eventstore orders.placed %s application/json", stream, v, stream); ce != want ||
			m.Header.Get("ce-time") != m.Header.Get(natsjs.HeaderRecordedAt) {
			badIDs = append(badIDs, ce+" "+m.Header.Get("ce-time"))
		}
		perStream[stream] = append(perStream[stream], v)
		total++
	}
	return perStream, total, badIDs
}

// count is how many messages the JetStream stream holds.
func (e *eventsOut) count(t *testing.T) int {
	t.Helper()
	s, err := e.js.Stream(context.Background(), e.names.stream)
	require.NoError(t, err)
	info, err := s.Info(context.Background())
	require.NoError(t, err)
	return int(info.State.Msgs)
}

// Appenders race on a few streams while the relay is killed and started
// again and again: every committed event is published once, each
// stream's in version order — also on PostgreSQL, where an append can
// commit after one with a higher position was read.
func TestStoredEventsArePublishedOnceInOrderWhileTheRelayIsKilled(t *testing.T) {
	t.Parallel()
	for _, backend := range sqldbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			t.Parallel()
			e := newEventsOut(t, backend)
			ctx := context.Background()
			const appenders, perAppender, streams = 4, 25, 3

			stopAppending := make(chan struct{})
			var appending sync.WaitGroup
			for a := range appenders {
				appending.Add(1)
				go func() {
					defer appending.Done()
					for i := range perAppender {
						stream := fmt.Sprintf("order-%d", (a+i)%streams)
						_, err := e.store.Append(ctx, stream, eventstore.Any, OrderPlaced{Order: stream, N: a*perAppender + i})
						if err != nil {
							t.Errorf("append to %s: %v", stream, err)
							return
						}
					}
				}()
			}
			go func() { appending.Wait(); close(stopAppending) }()

			// Kill the relay (cancel it in the middle of whatever it
			// does) every few deliveries until the appenders are done.
			kills := 0
			for done := false; !done; {
				runCtx, cancel := context.WithCancel(ctx)
				r := e.relay(t, e.sink.Deliver)
				ran := make(chan struct{})
				go func() { defer close(ran); _ = r.Run(runCtx, nil) }()
				before := e.count(t)
				select {
				case <-stopAppending:
					done = true
				default:
					waitUntil(t, "the relay delivers something", func() bool { return e.count(t) > before || isClosed(stopAppending) })
				}
				cancel()
				<-ran
				kills++
			}
			r := e.relay(t, e.sink.Deliver)
			runCtx, cancel := context.WithCancel(ctx)
			ran := make(chan struct{})
			go func() { defer close(ran); _ = r.Run(runCtx, nil) }()
			defer func() { cancel(); <-ran }()
			waitUntil(t, "every event is published", func() bool { return e.count(t) >= appenders*perAppender })

			// The oracle: the store's own streams.
			got, total, badIDs := e.published(t)
			require.Equal(t, appenders*perAppender, total, "each event once")
			require.Empty(t, badIDs, "Nats-Msg-Id is stream/version")
			for s := range streams {
				name := fmt.Sprintf("order-%d", s)
				recorded, err := e.store.Load(ctx, name, 1)
				require.NoError(t, err)
				var want []int64
				for _, r := range recorded {
					want = append(want, r.Version)
				}
				require.Equal(t, want, got[name], "stream %s in version order", name)
			}
			t.Logf("relay killed %d times; sink %+v", kills, e.sink.Stats())
		})
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// A relay that dies after the server stored an event but before its
// checkpoint moved publishes the event again; the server keeps one.
// Events committed while no relay ran are published when one starts.
func TestARelayCrashBetweenPublishAndCheckpointIsDeduplicated(t *testing.T) {
	t.Parallel()
	for _, backend := range sqldbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			t.Parallel()
			e := newEventsOut(t, backend)
			ctx := context.Background()
			for i := range 3 {
				_, err := e.store.Append(ctx, "order-1", eventstore.Any, OrderPlaced{Order: "order-1", N: i})
				require.NoError(t, err)
			}
			// Committed, not published: no relay has run.
			require.Zero(t, e.count(t))

			crashed := false
			crashAfterPublish := func(ctx context.Context, m outbox.Message) error {
				if err := e.sink.Deliver(ctx, m); err != nil {
					return err
				}
				if m.Key == "order-1/2" && !crashed {
					crashed = true
					return errors.New("the relay died before its checkpoint")
				}
				return nil
			}
			r := e.relay(t, crashAfterPublish)
			for e.count(t) < 3 || !crashed {
				_, err := r.Pass(ctx)
				require.NoError(t, err)
			}
			waitUntil(t, "the retried event is delivered", func() bool {
				_, err := r.Pass(ctx)
				require.NoError(t, err)
				return e.sink.Stats().Stored+e.sink.Stats().Duplicates == 4
			})

			got, total, badIDs := e.published(t)
			require.Equal(t, 3, total, "order-1/2 published twice, stored once")
			require.Empty(t, badIDs, "Nats-Msg-Id is stream/version")
			require.Equal(t, map[string][]int64{"order-1": {1, 2, 3}}, got)
			require.Equal(t, natsjs.PublisherStats{Stored: 3, Duplicates: 1}, e.sink.Stats())
		})
	}
}

func TestEventsOutRefuseBadInputAtStart(t *testing.T) {
	t.Parallel()
	url := serverURL(t)
	ctx := context.Background()
	_, js := connect(t, url)
	_, err := natsjs.NewEventSink(ctx, js, "passage.events.>")
	require.ErrorIs(t, err, natsjs.ErrInvalidPrefix)
	_, err = natsjs.NewEventSink(ctx, js, unique(t).prefix)
	require.ErrorIs(t, err, natsjs.ErrNoStream)

	// An event type that cannot end a subject: the append is refused and
	// nothing is stored.
	db, _ := sqldbtest.SQLite(t)
	ob, err := outbox.Open(ctx, db.DB)
	require.NoError(t, err)
	reg := eventstore.NewRegistry()
	require.NoError(t, eventstore.Register[OrderPlaced](reg, "order placed"))
	store, err := eventstore.Open(ctx, db.DB, reg, eventstore.WithInTransaction(natsjs.RecordEvents(ob)))
	require.NoError(t, err)
	_, err = store.Append(ctx, "order-1", eventstore.Any, OrderPlaced{Order: "order-1"})
	require.ErrorIs(t, err, natsjs.ErrUnsupportedEvent)
	v, err := store.Version(ctx, "order-1")
	require.NoError(t, err)
	require.Zero(t, v)
}

// An append that commits after a later one was published, with the lower
// position (PostgreSQL assigns positions at insert): the relay waits for
// it rather than moving its checkpoint past it, and publishes both.
// SQLite has one writer at a time, so its positions follow commit order.
func TestAnEventThatCommitsLateIsNotSkipped(t *testing.T) {
	t.Parallel()
	backend := sqldbtest.Backend{Name: "postgres", Open: sqldbtest.Postgres}
	e := newEventsOut(t, backend)
	ctx := context.Background()

	late, err := e.db.BeginTxx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = late.Rollback() }()
	_, err = e.store.AppendTx(ctx, late, "order-a", eventstore.Any, OrderPlaced{Order: "order-a"})
	require.NoError(t, err)
	_, err = e.store.Append(ctx, "order-b", eventstore.Any, OrderPlaced{Order: "order-b"})
	require.NoError(t, err)

	r := e.relay(t, e.sink.Deliver)
	for range 3 {
		_, err := r.Pass(ctx)
		require.NoError(t, err)
	}
	require.Zero(t, e.count(t), "order-b waits for the transaction that may still add an event before it")
	require.NoError(t, late.Commit())
	waitUntil(t, "both events are published", func() bool {
		_, err := r.Pass(ctx)
		require.NoError(t, err)
		return e.count(t) >= 2
	})
	got, total, badIDs := e.published(t)
	require.Equal(t, 2, total)
	require.Empty(t, badIDs)
	require.Equal(t, map[string][]int64{"order-a": {1}, "order-b": {1}}, got)
}

// A stored event leaves as a CloudEvent in the NATS binding's binary
// mode: rebuilt from its ce- headers and its body, it is what the
// envelope's JSON Schema (docs/schemas/cloudevent.json) takes, its data
// the event's JSON as the application encoded it.
func TestAStoredEventIsACloudEventTheSchemaTakes(t *testing.T) {
	t.Parallel()
	e := newEventsOut(t, sqldbtest.Backends()[0])
	ctx := context.Background()
	r := e.relay(t, e.sink.Deliver)
	_, err := r.Pass(ctx) // a relay starts where it first passes
	require.NoError(t, err)
	_, err = e.store.Append(ctx, "order-7", eventstore.Any, OrderPlaced{Order: "order-7", N: 1})
	require.NoError(t, err)
	_, err = r.Pass(ctx)
	require.NoError(t, err)
	msgs := stored(t, e.js, e.names.stream)
	require.Len(t, msgs, 1)

	ev := map[string]any{}
	for k, v := range msgs[0].Header {
		if name, ok := strings.CutPrefix(strings.ToLower(k), "ce-"); ok {
			ev[name] = v[0]
		}
	}
	var data any
	require.NoError(t, json.Unmarshal(msgs[0].Data, &data))
	ev["data"] = data
	body, err := json.Marshal(ev)
	require.NoError(t, err)

	c := jsonschema.NewCompiler()
	c.AssertFormat()
	schema, err := c.Compile(filepath.Join("..", "docs", "schemas", "cloudevent.json"))
	require.NoError(t, err)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	require.NoError(t, err)
	require.NoError(t, schema.Validate(inst), "%s", body)
	require.Equal(t, "order-7/1", ev["id"])
	require.Equal(t, "orders.placed", ev["type"])
	require.Equal(t, "order-7", ev["subject"])
	require.Equal(t, map[string]any{"Order": "order-7", "N": 1.0}, data)
}
