package sink_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
	"github.com/passage-of-time/passage/natsjs"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/tick"
)

// natsURL returns the test server's URL (PASSAGE_TEST_NATS, which .ci/run
// sets), or skips the test.
func natsURL(t *testing.T) string {
	t.Helper()
	u := natsURLOrEmpty()
	if u == "" {
		t.Skip("PASSAGE_TEST_NATS is not set")
	}
	return u
}

// natsURLOrEmpty is PASSAGE_TEST_NATS, for a test that checks NATS
// besides what it checks without.
func natsURLOrEmpty() string { return os.Getenv("PASSAGE_TEST_NATS") }

// natsPrefix is a subject prefix of the test's own on the shared server;
// the stream of its name is deleted when the test ends.
func natsPrefix(t *testing.T, js jetstream.JetStream) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	prefix := "passagetest." + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := js.DeleteStream(ctx, sink.NATSStreamName(prefix)); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Errorf("delete the stream of %s: %v (it stays on the NATS server)", prefix, err)
		}
	})
	return prefix
}

// jsOf is a connection of the test's own to url, to look at streams.
func jsOf(t *testing.T, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return js
}

// stored reads every message of stream, in its order.
func stored(t *testing.T, js jetstream.JetStream, stream string) []*jetstream.RawStreamMsg {
	t.Helper()
	ctx := context.Background()
	s, err := js.Stream(ctx, stream)
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	var msgs []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		require.NoError(t, err)
		msgs = append(msgs, m)
	}
	return msgs
}

func TestNATSSubjectsNameTheRecordAndEscapeScheduleNames(t *testing.T) {
	t.Parallel()
	slot := time.Date(2026, 11, 21, 12, 5, 0, 0, time.UTC)
	for _, c := range []struct {
		event   any
		subject string
	}{
		{minute(1), "passage.minute"},
		{tick.DayHasPassed{Passage: tick.Passage{At: slot}}, "passage.day"},
		{tick.TicksSkipped{Unit: tick.Hour, From: slot, To: slot.Add(time.Hour), Count: 2, Policy: "skip"}, "passage.skipped.hour"},
		{schedule.Run{SlotID: "nightly-report@x", Schedule: "nightly-report", Slot: slot}, "passage.schedule.nightly-report"},
		{schedule.Run{SlotID: "x", Schedule: "billing.eu", Slot: slot}, "passage.schedule.billing%2Eeu"},
		{schedule.Run{SlotID: "x", Schedule: "a b*>%é", Slot: slot}, "passage.schedule.a%20b%2A%3E%25%C3%A9"},
		{schedule.SlotsSkipped{Schedule: "poll", From: slot, To: slot, Count: 1, Policy: "skip"}, "passage.schedule.poll.skipped"},
	} {
		body, env, err := sink.Marshal(c.event)
		require.NoError(t, err)
		subject, err := sink.NATSSubject("passage", env.Type, body)
		require.NoError(t, err, "%T", c.event)
		require.Equal(t, c.subject, subject, "%T", c.event)
	}
	_, err := sink.NATSSubject("passage", "Unknown", []byte(`{"unit":"minute"}`))
	require.ErrorContains(t, err, `record type "Unknown" has no subject`)
	body, _, err := sink.Marshal(minute(1))
	require.NoError(t, err)
	_, err = sink.NATSSubject("passage", "MinuteHasPassed", bytes.Replace(body, []byte(`"unit":"minute"`), []byte(`"unit":"minute.x"`), 1))
	require.ErrorContains(t, err, `without a unit of time (unit "minute.x")`)
}

func TestNATSMsgIDIsTheKeyUnlessAHeaderCannotCarryIt(t *testing.T) {
	t.Parallel()
	for key, id := range map[string]string{
		"minute/2026-11-21T12:01:00Z":     "minute/2026-11-21T12:01:00Z",
		"nightly report@2026-11-21T12:05": "nightly report@2026-11-21T12:05",
		"zażółć@2026-11-21T12:05:00Z":     "zażółć@2026-11-21T12:05:00Z",
		"a\r\nb@2026-11-21T12:05:00Z":     "a%0D%0Ab@2026-11-21T12:05:00Z",
		"a%0Ab@2026-11-21T12:05:00Z":      "a%250Ab@2026-11-21T12:05:00Z",
		" poll @x":                        "%20poll @x",
		"poll@x ":                         "poll@x%20",
	} {
		require.Equal(t, id, sink.NATSMsgID(key), "%q", key)
	}
	require.NotEqual(t, sink.NATSMsgID("a\nb"), sink.NATSMsgID("a%0Ab"), "two keys, two ids")
}

func TestCheckNATSRefusesWhatNoServerCouldTake(t *testing.T) {
	t.Parallel()
	good := sink.NATSConfig{URL: "nats://127.0.0.1:4222", Window: time.Minute}
	cfg, err := sink.CheckNATS(good)
	require.NoError(t, err)
	require.Equal(t, "passage", cfg.Prefix)
	require.Equal(t, "PASSAGE", cfg.Stream)
	cfg, err = sink.CheckNATS(sink.NATSConfig{URL: "nats://a:1, tls://b:2", Prefix: "acme.time", Window: time.Minute})
	require.NoError(t, err)
	require.Equal(t, "ACME_TIME", cfg.Stream)

	for _, c := range []struct {
		cfg  sink.NATSConfig
		want string
	}{
		{sink.NATSConfig{URL: "", Window: time.Minute}, "empty URL"},
		{sink.NATSConfig{URL: "http://127.0.0.1:4222", Window: time.Minute}, `scheme "http" is not nats, tls, ws or wss`},
		{sink.NATSConfig{URL: "127.0.0.1:4222", Window: time.Minute}, "127.0.0.1:4222"},
		{sink.NATSConfig{URL: "nats://s3cret@:4222", Window: time.Minute}, `"nats://…@:4222": no host`},
		{sink.NATSConfig{URL: "nats://a:1,", Window: time.Minute}, "no host"},
		{sink.NATSConfig{URL: good.URL, Prefix: "passage.*", Window: time.Minute}, `token "*" holds the wildcard '*'`},
		{sink.NATSConfig{URL: good.URL, Prefix: "passage.>", Window: time.Minute}, `token ">" holds the wildcard '>'`},
		{sink.NATSConfig{URL: good.URL, Prefix: "pass>age", Window: time.Minute}, "holds the wildcard '>'"},
		{sink.NATSConfig{URL: good.URL, Prefix: "passage..x", Window: time.Minute}, "token 2 is empty"},
		{sink.NATSConfig{URL: good.URL, Prefix: "passage.", Window: time.Minute}, "token 2 is empty"},
		{sink.NATSConfig{URL: good.URL, Prefix: "my passage", Window: time.Minute}, "white space"},
		{sink.NATSConfig{URL: good.URL, Prefix: "$JS.x", Window: time.Minute}, "starting with $ are the server's"},
		{sink.NATSConfig{URL: good.URL, Stream: "A.B", Window: time.Minute}, `stream name "A.B"`},
		{sink.NATSConfig{URL: good.URL}, "duplicate window 0s must be positive"},
	} {
		_, err := sink.CheckNATS(c.cfg)
		require.ErrorIs(t, err, sink.ErrBadNATSConfig, "%+v", c.cfg)
		require.ErrorContains(t, err, c.want, "%+v", c.cfg)
		require.NotContains(t, err.Error(), "s3cret")
	}
	shown, err := sink.RedactNATSURL("nats://user:pw@a:4222,nats://tok3n@b:4222")
	require.NoError(t, err)
	require.Equal(t, "nats://…@a:4222,nats://…@b:4222", shown)
}

// Each record is stored once under its key, with the body the webhook
// would post, on its subject; sent again (a relay that died before its
// checkpoint), it is acknowledged as a duplicate and not stored twice.
func TestNATSStoresEachRecordOnceUnderItsKey(t *testing.T) {
	t.Parallel()
	url := natsURL(t)
	js := jsOf(t, url)
	prefix := natsPrefix(t, js)
	n, err := sink.NewNATS(context.Background(), sink.NATSConfig{URL: url, Prefix: prefix, Window: time.Hour})
	require.NoError(t, err)
	defer n.Close()
	require.Equal(t, sink.NATSStreamName(prefix), n.Stream())

	slot := time.Date(2026, 11, 21, 12, 5, 0, 0, time.UTC)
	events := []any{
		minute(1),
		schedule.Run{RunID: "r1", SlotID: schedule.SlotID("poll", slot), Schedule: "poll", Slot: slot, FiredAt: slot, Attempt: 1},
		minute(2),
		// A name no subject or header could carry as it is.
		schedule.Run{RunID: "r2", SlotID: schedule.SlotID("billing.eu\r\nnight", slot), Schedule: "billing.eu\r\nnight", Slot: slot, FiredAt: slot, Attempt: 1},
		tick.TicksSkipped{Unit: tick.Minute, From: minute(3).At, To: minute(5).At, Count: 3, Policy: "latest-only", EmittedAt: minute(6).At},
	}
	require.NoError(t, send(t, n, events...))
	require.NoError(t, send(t, n, events...), "sent again")
	require.Equal(t, sink.NATSStats{Stored: 5, Duplicates: 5}, n.Stats())

	info, err := js.Stream(context.Background(), n.Stream())
	require.NoError(t, err)
	require.Equal(t, time.Hour, info.CachedInfo().Config.Duplicates, "created with the window asked for")
	msgs := stored(t, js, n.Stream())
	require.Len(t, msgs, 5, "each once")
	for i, e := range events {
		body, env, err := sink.Marshal(e)
		require.NoError(t, err)
		subject, err := sink.NATSSubject(prefix, env.Type, body)
		require.NoError(t, err)
		require.Equal(t, subject, msgs[i].Subject)
		require.Equal(t, sink.NATSMsgID(env.ID), msgs[i].Header.Get(jetstream.MsgIDHeader))
		require.Equal(t, env.Type, msgs[i].Header.Get(sink.HeaderNATSEvent))
		if _, run := e.(schedule.Run); run {
			var ev sink.Event
			require.NoError(t, json.Unmarshal(body, &ev))
			require.Equal(t, string(ev.Data), string(msgs[i].Data), "a run's data, as the webhook's body holds it")
			require.Equal(t, "ScheduleRun", msgs[i].Header.Get("ce-type"))
			continue
		}
		// Time as natsjs lays it out, byte for byte: what a Publisher
		// of the same event would have stored.
		want, err := natsjs.Encode(prefix, e)
		require.NoError(t, err)
		require.Equal(t, want.Subject, msgs[i].Subject)
		require.Equal(t, want.Header.Get(jetstream.MsgIDHeader), msgs[i].Header.Get(jetstream.MsgIDHeader))
		require.Equal(t, string(want.Data), string(msgs[i].Data))
	}
	require.Equal(t, prefix+".minute", msgs[0].Subject)
	require.Equal(t, prefix+".skipped.minute", msgs[4].Subject)
	require.Equal(t, "skipped/minute/2026-11-21T12:03:00Z..2026-11-21T12:05:00Z", msgs[4].Header.Get(jetstream.MsgIDHeader))
	require.Equal(t, prefix+".schedule.poll", msgs[1].Subject)
	require.Equal(t, "poll@2026-11-21T12:05:00Z", msgs[1].Header.Get(jetstream.MsgIDHeader), "the key as it is")
	require.Equal(t, prefix+".schedule.billing%2Eeu%0D%0Anight", msgs[3].Subject)
	require.Equal(t, "billing.eu%0D%0Anight@2026-11-21T12:05:00Z", msgs[3].Header.Get(jetstream.MsgIDHeader))
}

// Send returns only once the server stored the record: a publish the
// server does not store (its stream deleted behind the sink's back) is an
// error, so the relay keeps the record and sends it again, and once the
// stream is back it is stored.
func TestNATSSendFailsUnlessTheServerStoredTheRecord(t *testing.T) {
	t.Parallel()
	url := natsURL(t)
	js := jsOf(t, url)
	prefix := natsPrefix(t, js)
	cfg := sink.NATSConfig{URL: url, Prefix: prefix, Window: time.Hour}
	n, err := sink.NewNATS(context.Background(), cfg)
	require.NoError(t, err)
	defer n.Close()
	require.NoError(t, js.DeleteStream(context.Background(), n.Stream()))

	err = send(t, n, minute(1))
	require.ErrorContains(t, err, "publish minute/2026-11-21T12:01:00Z to "+prefix+".minute on stream "+n.Stream())
	require.Equal(t, sink.NATSStats{}, n.Stats())

	again, err := sink.NewNATS(context.Background(), cfg) // creates the stream again
	require.NoError(t, err)
	again.Close()
	require.NoError(t, send(t, n, minute(1)))
	msgs := stored(t, js, n.Stream())
	require.Len(t, msgs, 1)
	require.Equal(t, "minute/2026-11-21T12:01:00Z", msgs[0].Header.Get(jetstream.MsgIDHeader))
}

// A stream that forgets message ids sooner than the window asked for is
// refused before anything is published, naming both windows.
func TestNATSRefusesAStreamWithAShortDuplicateWindow(t *testing.T) {
	t.Parallel()
	url := natsURL(t)
	js := jsOf(t, url)
	prefix := natsPrefix(t, js)
	_, err := js.CreateStream(context.Background(), jetstream.StreamConfig{
		Name: sink.NATSStreamName(prefix), Subjects: []string{prefix + ".>"}, Duplicates: time.Second,
	})
	require.NoError(t, err)
	_, err = sink.NewNATS(context.Background(), sink.NATSConfig{URL: url, Prefix: prefix, Window: 2 * time.Hour})
	require.ErrorIs(t, err, natsjs.ErrDuplicateWindow)
	require.ErrorContains(t, err, "keeps message ids for 1s, less than the 2h0m0s asked for")
	require.Empty(t, stored(t, js, sink.NATSStreamName(prefix)))
}

// An unreachable server is an error from NewNATS, naming it.
func TestNATSUnreachableServerIsAnErrorAtStart(t *testing.T) {
	t.Parallel()
	natsURL(t)
	_, err := sink.NewNATS(context.Background(), sink.NATSConfig{URL: "nats://tok3n@127.0.0.1:1", Window: time.Hour})
	require.Error(t, err)
	require.True(t, strings.HasPrefix(err.Error(), "sink: NATS nats://…@127.0.0.1:1: connect: "), err.Error())
	require.NotContains(t, err.Error(), "tok3n")
}
