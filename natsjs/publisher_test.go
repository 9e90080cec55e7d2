package natsjs_test

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/natsjs"
	"github.com/passage-of-time/passage/tick"
)

// stored reads every message of stream, in stream order.
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
		require.NoError(t, err, "message %d of stream %s", seq, stream)
		msgs = append(msgs, m)
	}
	return msgs
}

func TestTheSameBoundaryPublishedTwiceIsStoredOnce(t *testing.T) {
	t.Parallel()
	url := serverURL(t)
	n := unique(t)
	ctx := context.Background()
	// Two replicas, each with its own connection, as after a lease
	// hand-over: the second emits the boundary again, a minute later by
	// its clock.
	_, jsA := connect(t, url)
	_, jsB := connect(t, url)
	ensure(t, jsA, n)
	a, err := natsjs.NewPublisher(ctx, jsA, n.prefix)
	require.NoError(t, err)
	b, err := natsjs.NewPublisher(ctx, jsB, n.prefix)
	require.NoError(t, err)

	at := time.Date(2026, 11, 26, 12, 1, 0, 0, time.UTC)
	first := tick.MinuteHasPassed{Passage: tick.Passage{At: at, Since: at.Add(-time.Minute), EmittedAt: at.Add(time.Second)}}
	again := first
	again.EmittedAt = at.Add(time.Minute)
	again.CatchUp = true
	require.NoError(t, a.Publish(ctx, first))
	require.NoError(t, b.Publish(ctx, again))
	require.NoError(t, a.Publish(ctx, first))

	msgs := stored(t, jsA, n.stream)
	require.Len(t, msgs, 1, "the same boundary three times, by two publishers")
	require.Equal(t, n.prefix+".minute", msgs[0].Subject)
	require.Equal(t, "minute/2026-11-26T12:01:00Z", msgs[0].Header.Get(jetstream.MsgIDHeader))
	got := tick.MinuteHasPassed{Passage: passageIn(t, msgs[0].Data)}
	require.Equal(t, first, got, "the first publish is the one stored")
	// A CloudEvent in the NATS binding's binary mode: its attributes in
	// ce- headers, its data the body.
	for name, want := range map[string]string{
		"ce-specversion": "1.0", "ce-id": "minute/2026-11-26T12:01:00Z", "ce-source": "/passage/tick",
		"ce-type": "MinuteHasPassed", "ce-subject": "minute", "ce-time": "2026-11-26T12:01:00Z",
		"ce-datacontenttype": "application/json",
	} {
		require.Equal(t, want, msgs[0].Header.Get(name), name)
	}
	require.JSONEq(t, `{"unit":"minute","boundary":"2026-11-26T12:01:00Z","previous":"2026-11-26T12:00:00Z","emitted_at":"2026-11-26T12:01:01Z","catch_up":false}`, string(msgs[0].Data))
	require.Equal(t, natsjs.PublisherStats{Stored: 1, Duplicates: 1}, a.Stats())
	require.Equal(t, natsjs.PublisherStats{Stored: 0, Duplicates: 1}, b.Stats())
}

func TestATickerOnAFakeClockPutsMinutesOnTheStreamInOrder(t *testing.T) {
	t.Parallel()
	url := serverURL(t)
	n := unique(t)
	ctx := context.Background()
	_, js := connect(t, url)
	ensure(t, js, n)
	pub, err := natsjs.NewPublisher(ctx, js, n.prefix)
	require.NoError(t, err)
	require.Equal(t, n.stream, pub.Stream())

	start := time.Date(2026, 11, 26, 12, 0, 30, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(start)
	ticker, err := tick.New(pub, tick.NewMemoryStore(), tick.WithClock(clock), tick.WithUnits(tick.Minute, tick.Hour))
	require.NoError(t, err)
	require.NoError(t, ticker.Start(ctx))
	t.Cleanup(func() { _ = ticker.Stop(context.Background()) })
	const minutes = 65
	for range minutes {
		require.NoError(t, tick.AdvanceAndWait(ctx, clock, time.Minute, ticker))
	}

	// The oracle: every minute from 12:01 to 13:05, and 13:00's hour
	// right after its minute (the ticker emits units finest first).
	type want struct {
		subject, id string
		at          time.Time
	}
	var expected []want
	for i := 1; i <= minutes; i++ {
		at := time.Date(2026, 11, 26, 12, i, 0, 0, time.UTC)
		expected = append(expected, want{n.prefix + ".minute", "minute/" + at.Format(time.RFC3339), at})
		if at.Minute() == 0 {
			expected = append(expected, want{n.prefix + ".hour", "hour/" + at.Format(time.RFC3339), at})
		}
	}
	var got []want
	for _, m := range stored(t, js, n.stream) {
		p := passageIn(t, m.Data)
		got = append(got, want{m.Subject, m.Header.Get(jetstream.MsgIDHeader), p.At})
	}
	require.Equal(t, expected, got)
	require.Equal(t, natsjs.PublisherStats{Stored: minutes + 1}, pub.Stats())
}

func TestAnUnreachableServerIsAnErrorAtStart(t *testing.T) {
	t.Parallel()
	serverURL(t)
	// A connection that keeps trying a port nobody listens on, as a
	// service started before its server would hold.
	url := "nats://127.0.0.1:" + itoa(freePort(t))
	nc, err := nats.Connect(url, nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	pub, err := natsjs.NewPublisher(ctx, js, "passagetest.unreachable.time")
	require.Error(t, err)
	require.Nil(t, pub, "no publisher, so no ticker can publish through it")
	require.Contains(t, err.Error(), url, "the error names the server")
	require.Contains(t, err.Error(), "passagetest.unreachable.time.>")
	t.Log(err)

	_, err = natsjs.EnsureStream(ctx, js, "PASSAGE_TEST_UNREACHABLE", "passagetest.unreachable.time")
	require.Error(t, err)
	t.Log(err)
}

func TestEnsureStreamRefusesAShortDuplicateWindow(t *testing.T) {
	t.Parallel()
	url := serverURL(t)
	n := unique(t)
	ctx := context.Background()
	_, js := connect(t, url)
	ensure(t, js, n, natsjs.WithDuplicateWindow(30*time.Second))

	// A ticker whose lease lasts a minute needs a minute's window.
	_, err := natsjs.EnsureStream(ctx, js, n.stream, n.prefix, natsjs.WithDuplicateWindow(time.Minute))
	require.ErrorIs(t, err, natsjs.ErrDuplicateWindow)
	require.Contains(t, err.Error(), "30s")
	require.Contains(t, err.Error(), "1m0s")
	require.Contains(t, err.Error(), n.stream)
	t.Log(err)

	s, err := js.Stream(ctx, n.stream)
	require.NoError(t, err)
	require.Equal(t, 30*time.Second, s.CachedInfo().Config.Duplicates, "the existing stream is left as it was")

	// As long or shorter is fine.
	_, err = natsjs.EnsureStream(ctx, js, n.stream, n.prefix, natsjs.WithDuplicateWindow(30*time.Second))
	require.NoError(t, err)
	_, err = natsjs.EnsureStream(ctx, js, n.stream, n.prefix, natsjs.WithDuplicateWindow(time.Second))
	require.NoError(t, err)
}

func TestEnsureStreamRefusesAStreamThatStoresOnlySomeSubjects(t *testing.T) {
	t.Parallel()
	url := serverURL(t)
	n := unique(t)
	ctx := context.Background()
	_, js := connect(t, url)
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: n.stream, Subjects: []string{n.prefix + ".minute"}, Storage: jetstream.MemoryStorage})
	require.NoError(t, err)
	deleteWithTest(t, js, n.stream)

	_, err = natsjs.EnsureStream(ctx, js, n.stream, n.prefix)
	require.ErrorIs(t, err, natsjs.ErrNoStream)
	t.Log(err)
	_, err = natsjs.NewPublisher(ctx, js, n.prefix)
	require.ErrorIs(t, err, natsjs.ErrNoStream)
	t.Log(err)
}

func TestNoStreamIsAnErrorAtStart(t *testing.T) {
	t.Parallel()
	url := serverURL(t)
	n := unique(t)
	_, js := connect(t, url)
	_, err := natsjs.NewPublisher(context.Background(), js, n.prefix)
	require.ErrorIs(t, err, natsjs.ErrNoStream)
	require.Contains(t, err.Error(), "EnsureStream")
}

func TestAPrefixThatIsNotASubjectIsRefused(t *testing.T) {
	t.Parallel()
	url := serverURL(t)
	n := unique(t)
	ctx := context.Background()
	_, js := connect(t, url)
	for _, prefix := range []string{
		"", "time.*", "time.>", ">", "*", "passage.ti*me", "a..b", ".a", "a.", "a b", "a\tb", "a\nb", "a\x00b",
	} {
		_, err := natsjs.EnsureStream(ctx, js, n.stream, prefix)
		require.ErrorIs(t, err, natsjs.ErrInvalidPrefix, "EnsureStream(%q)", prefix)
		_, err = natsjs.NewPublisher(ctx, js, prefix)
		require.ErrorIs(t, err, natsjs.ErrInvalidPrefix, "NewPublisher(%q)", prefix)
		_, err = natsjs.NewConsumer(js, prefix, "durable", newBus(t))
		require.ErrorIs(t, err, natsjs.ErrInvalidPrefix, "NewConsumer(%q)", prefix)
		if prefix == "time.*" {
			t.Log(err)
		}
	}
	// Nothing was created on the server.
	_, err := js.Stream(ctx, n.stream)
	require.ErrorIs(t, err, jetstream.ErrStreamNotFound)
}
