package natsjs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/passage-of-time/passage/bus"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/internal/telemetrytest"
	"github.com/passage-of-time/passage/natsjs"
	"github.com/passage-of-time/passage/tick"
)

// poisonKind is a message no handler must see, published between good
// minutes, and the reason the consumer must give for it.
type poisonKind struct {
	name    string
	subject string // after the prefix
	id      string // Nats-Msg-Id, none when empty
	body    []byte
	reason  natsjs.PoisonReason
	ce      nats.Header // ce- headers: a CloudEvent's attributes
}

// cloudEventOf is the CloudEvent Encode makes of ev (under prefix
// "passage"), its attributes with those of set replaced ("" removes).
func cloudEventOf(t *testing.T, ev any, set map[string]string) (nats.Header, []byte) {
	t.Helper()
	msg, err := natsjs.Encode("passage", ev)
	require.NoError(t, err)
	h := nats.Header{}
	for k, v := range msg.Header {
		if strings.HasPrefix(k, "ce-") {
			h[k] = v
		}
	}
	for k, v := range set {
		if v == "" {
			h.Del(k)
			continue
		}
		h.Set(k, v)
	}
	return h, msg.Data
}

// poisonKinds are the issue's: what reached handlers as the passage of
// time, and the 1 MB body logged 3 MB long.
func poisonKinds(t *testing.T) []poisonKind {
	t.Helper()
	skip := tick.TicksSkipped{Unit: tick.Minute, From: minute(90), To: minute(93), Count: 4, Policy: "latest-only", EmittedAt: minute(94)}
	skipJSON, err := json.Marshal(skip)
	require.NoError(t, err)
	minuteJSON := func(p tick.Passage) []byte {
		b, err := json.Marshal(tick.MinuteHasPassed{Passage: p})
		require.NoError(t, err)
		return b
	}
	// Bodies that are time, but not the minute they claim to be: each
	// under the id of a minute that is not one of the good ones, so the
	// server's de-duplication does not drop them first.
	offMinute := tick.Passage{At: minute(50).Add(30 * time.Second), Since: minute(49), EmittedAt: minute(51)}
	early := tick.Passage{At: minute(51), Since: minute(50), EmittedAt: minute(51).Add(-time.Second)}
	wrongID := tick.Passage{At: minute(52), Since: minute(51), EmittedAt: minute(52).Add(time.Second)}
	// CloudEvents (Encode's shape) of minutes that are not good ones.
	at := func(i int) tick.MinuteHasPassed {
		return tick.MinuteHasPassed{Passage: tick.Passage{At: minute(i), Since: minute(i - 1), EmittedAt: minute(i).Add(time.Second)}}
	}
	skipType, skipData := cloudEventOf(t, at(60), map[string]string{"ce-type": "TicksSkipped"})
	hourType, hourData := cloudEventOf(t, at(61), map[string]string{"ce-type": "HourHasPassed"})
	noTime, noTimeData := cloudEventOf(t, at(62), map[string]string{"ce-time": ""})
	otherSource, otherSourceData := cloudEventOf(t, at(63), map[string]string{"ce-source": "/orders"})
	otherID, otherIDData := cloudEventOf(t, at(64), map[string]string{"ce-id": at(65).ID()})
	domain, _ := cloudEventOf(t, at(66), nil)
	skipCE, skipCEData := cloudEventOf(t, skip, nil)
	return []poisonKind{
		{"a CloudEvent of a skip report's type on the minutes' subject", "minute", at(60).ID(), skipData, natsjs.PoisonSubject, skipType},
		{"a CloudEvent of an hour's type on the minutes' subject", "minute", at(61).ID(), hourData, natsjs.PoisonSubject, hourType},
		{"a CloudEvent without ce-time", "minute", at(62).ID(), noTimeData, natsjs.PoisonMissingField, noTime},
		{"a CloudEvent from another source", "minute", at(63).ID(), otherSourceData, natsjs.PoisonInconsistent, otherSource},
		{"a CloudEvent under another minute's ce-id", "minute", at(64).ID(), otherIDData, natsjs.PoisonMessageID, otherID},
		{"a CloudEvent of a domain event", "minute", at(66).ID(), []byte(`{"order":"o-1","n":7}`), natsjs.PoisonMissingField, domain},
		{"a CloudEvent of a skip report on the minutes' subject", "minute", "minute-skip-ce", skipCEData, natsjs.PoisonSubject, skipCE},
		{"a domain event", "minute", "orders/o-1/7", []byte(`{"Order":"o-1","N":7}`), natsjs.PoisonMissingField, nil},
		{"a skip report on the minutes' subject", "minute", "minute-skip", skipJSON, natsjs.PoisonMissingField, nil},
		{"null", "minute", "", []byte(`null`), natsjs.PoisonMissingField, nil},
		{"an empty object", "minute", "empty", []byte(`{}`), natsjs.PoisonMissingField, nil},
		{"a skip report for a fortnight", "skipped.fortnight", "skipped/fortnight/x", bytes.Replace(skipJSON, []byte(`"minute"`), []byte(`"fortnight"`), 1), natsjs.PoisonUnknownUnit, nil},
		{"a wrong message id", "minute", "minute/2026-11-26T12:53:00Z", minuteJSON(wrongID), natsjs.PoisonMessageID, nil},
		{"a boundary not on a boundary", "minute", "minute/2026-11-26T12:50:30Z", minuteJSON(offMinute), natsjs.PoisonNotABoundary, nil},
		{"an emission before its boundary", "minute", "minute/2026-11-26T12:51:00Z", minuteJSON(early), natsjs.PoisonInconsistent, nil},
		{"a 1 MB body", "minute", "huge", []byte(`{"At":"` + strings.Repeat("9", 1_000_000) + `"}`), natsjs.PoisonTooLarge, nil},
		{"not JSON", "minute", "garbage", []byte("not an event"), natsjs.PoisonMalformed, nil},
	}
}

// recordSizes is a slog handler that keeps the length of each record as
// the JSON handler writes it.
type recordSizes struct {
	slog.Handler
	mu    *sync.Mutex
	buf   *bytes.Buffer
	sizes *[]int
	msgs  *[]string
}

func newRecordSizes() *recordSizes {
	buf := new(bytes.Buffer)
	return &recordSizes{Handler: slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}), mu: new(sync.Mutex), buf: buf, sizes: new([]int), msgs: new([]string)}
}

func (h *recordSizes) Handle(ctx context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.buf.Reset()
	err := h.Handler.Handle(ctx, r)
	*h.sizes = append(*h.sizes, h.buf.Len())
	*h.msgs = append(*h.msgs, r.Message)
	return err
}

func (h *recordSizes) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.Handler = h.Handler.WithAttrs(as)
	return &c
}

func (h *recordSizes) WithGroup(name string) slog.Handler {
	c := *h
	c.Handler = h.Handler.WithGroup(name)
	return &c
}

func (h *recordSizes) records() ([]int, []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]int(nil), *h.sizes...), append([]string(nil), *h.msgs...)
}

// A consumer fed every poison kind between good minutes: only the good
// minutes reach the bus, each once, in order, and through Once each
// commits its effect once; each poison is terminated once (the server's
// own advisories and delivery counts say so), counted with its reason in
// Stats and the metric, and logged in one record of bounded size.
func TestAConsumerTerminatesPoisonAndHandlesOnlyTheMinutes(t *testing.T) {
	t.Parallel()
	url := serverURL(t)
	for _, backend := range sqldbtest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			n := unique(t)
			nc, js := connect(t, url)
			s := ensure(t, js, n)
			db, _ := backend.Open(t)
			fx := newEffects(t, db.DB)
			inbox, err := natsjs.OpenInbox(ctx, db.DB)
			require.NoError(t, err)
			once, err := natsjs.Once(inbox, "orders", fx.write)
			require.NoError(t, err)
			b := newBus(t)
			_, err = bus.Subscribe(b, once)
			require.NoError(t, err)
			var seen seenLog
			_, err = bus.Subscribe(b, seen.handler)
			require.NoError(t, err)
			var (
				mu    sync.Mutex
				other []any
			)
			_, err = bus.Subscribe(b, func(_ context.Context, e any) error {
				if _, ok := e.(tick.MinuteHasPassed); !ok {
					mu.Lock()
					other = append(other, e)
					mu.Unlock()
				}
				return nil
			})
			require.NoError(t, err)

			// The server's word on each termination, counted by stream
			// sequence.
			terms := map[uint64]int{}
			advisories, err := nc.Subscribe("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED."+n.stream+".orders", func(m *nats.Msg) {
				var a struct {
					StreamSeq uint64 `json:"stream_seq"`
				}
				if json.Unmarshal(m.Data, &a) == nil {
					mu.Lock()
					terms[a.StreamSeq]++
					mu.Unlock()
				}
			})
			require.NoError(t, err)
			t.Cleanup(func() { _ = advisories.Unsubscribe() })
			require.NoError(t, nc.Flush())

			pub, err := natsjs.NewPublisher(ctx, js, n.prefix)
			require.NoError(t, err)
			kinds := poisonKinds(t)
			wantReasons := map[natsjs.PoisonReason]int64{}
			poisonSeq := map[uint64]string{}
			require.NoError(t, pub.Publish(ctx, minuteEvent(1)))
			for i, k := range kinds {
				msg := nats.NewMsg(n.prefix + "." + k.subject)
				msg.Data = k.body
				for h, v := range k.ce {
					msg.Header[h] = v
				}
				if k.id != "" {
					msg.Header.Set(jetstream.MsgIDHeader, k.id)
				}
				ack, err := js.PublishMsg(ctx, msg)
				require.NoError(t, err, k.name)
				require.False(t, ack.Duplicate, k.name)
				poisonSeq[ack.Sequence] = k.name
				wantReasons[k.reason]++
				if i%2 == 0 {
					require.NoError(t, pub.Publish(ctx, minuteEvent(i+2)))
					continue
				}
				// Every other good minute in the shape before issue
				// 34, which a consumer reads for one release.
				publishLegacy(t, js, n.prefix, minuteEvent(i+2))
			}
			good := len(kinds) + 1

			logs := newRecordSizes()
			mp, reader := telemetrytest.MeterReader(t)
			c := startConsumer(t, js, n.prefix, "orders", b, natsjs.WithLogger(slog.New(logs)), natsjs.WithMeterProvider(mp))
			waitUntil(t, "every message is handled or terminated", func() bool {
				st := c.Stats()
				return st.Handled+st.Terminated >= int64(good+len(kinds))
			})

			var want []delivery
			for i := 1; i <= good; i++ {
				want = append(want, delivery{minute(i), 1})
			}
			require.Equal(t, want, seen.all(), "only the good minutes, each once, in order")
			require.Equal(t, minutes(1, good), fx.rows(t), "each good minute's effect committed once, in order")
			waitUntil(t, "the server advised every termination", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(terms) >= len(kinds)
			})
			mu.Lock()
			require.Empty(t, other, "nothing but minutes reached the bus")
			for seq, name := range poisonSeq {
				require.Equal(t, 1, terms[seq], "%s (stream sequence %d) terminated once", name, seq)
			}
			require.Len(t, terms, len(kinds), "nothing else terminated")
			mu.Unlock()

			st := c.Stats()
			require.Equal(t, wantReasons, st.Poison)
			require.Zero(t, st.Failed)
			info, err := s.Consumer(ctx, "orders")
			require.NoError(t, err)
			require.EqualValues(t, good+len(kinds), info.CachedInfo().Delivered.Consumer, "each message delivered once")
			require.Zero(t, info.CachedInfo().NumRedelivered)
			require.Zero(t, info.CachedInfo().NumAckPending)

			got := map[natsjs.PoisonReason]int64{}
			m, ok := telemetrytest.Collect(t, reader, "github.com/passage-of-time/passage/natsjs")["passage.natsjs.consumer.poison"]
			require.True(t, ok, "the poison counter is recorded")
			sum, ok := m.Data.(metricdata.Sum[int64])
			require.True(t, ok, "%T", m.Data)
			for _, dp := range sum.DataPoints {
				require.Equal(t, 2, dp.Attributes.Len(), "consumer and reason: %v", dp.Attributes.ToSlice())
				consumer, _ := dp.Attributes.Value("consumer")
				require.Equal(t, "orders", consumer.AsString())
				r, _ := dp.Attributes.Value("reason")
				reason := natsjs.PoisonReason(r.AsString())
				require.Contains(t, natsjs.PoisonReasons(), reason)
				if dp.Value > 0 {
					got[reason] = dp.Value
				}
			}
			require.Len(t, sum.DataPoints, len(natsjs.PoisonReasons()), "a series per reason, from zero")
			require.Equal(t, wantReasons, got)

			sizes, msgs := logs.records()
			terminated := 0
			for i, size := range sizes {
				require.LessOrEqual(t, size, 64<<10, "record %d (%s) is %d bytes", i, msgs[i], size)
				if strings.Contains(msgs[i], "terminates") {
					terminated++
				}
			}
			require.Equal(t, len(kinds), terminated, "each poison logged once: %q", msgs)
		})
	}
}

func TestPoisonReasonsAreAFixedSet(t *testing.T) {
	var names []string
	for _, r := range natsjs.PoisonReasons() {
		names = append(names, string(r))
	}
	require.Equal(t, "subject unknown-unit too-large malformed missing-field not-a-boundary inconsistent message-id", strings.Join(names, " "))
}

// publishLegacy publishes ev as publishers did before issue 34: tick's
// JSON of the event with its ID as Nats-Msg-Id, no ce- header.
func publishLegacy(t *testing.T, js jetstream.JetStream, prefix string, ev tick.MinuteHasPassed) {
	t.Helper()
	msg := nats.NewMsg(prefix + ".minute")
	var err error
	msg.Data, err = json.Marshal(ev)
	require.NoError(t, err)
	msg.Header.Set(jetstream.MsgIDHeader, ev.ID())
	_, err = js.PublishMsg(context.Background(), msg)
	require.NoError(t, err)
}
