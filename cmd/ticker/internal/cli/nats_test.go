package cli_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/tick"
)

// natsURL returns the NATS server the tests publish to
// (PASSAGE_TEST_NATS, which .ci/run sets), or skips the test.
func natsURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("PASSAGE_TEST_NATS")
	if u == "" {
		t.Skip("PASSAGE_TEST_NATS is not set")
	}
	return u
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

// natsPrefix is a subject prefix of the test's own on the shared server;
// its stream (the default name, sink.NATSStreamName) is deleted when the
// test ends.
func natsPrefix(t *testing.T, js jetstream.JetStream) (prefix, stream string) {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	prefix = "passagetest." + hex.EncodeToString(b)
	stream = sink.NATSStreamName(prefix)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := js.DeleteStream(ctx, stream); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Errorf("delete stream %s: %v (it stays on the NATS server)", stream, err)
		}
	})
	return prefix, stream
}

// streamMsgs reads every message of stream, in the stream's order; none
// when the stream does not exist.
func streamMsgs(t *testing.T, js jetstream.JetStream, stream string) []*jetstream.RawStreamMsg {
	t.Helper()
	ctx := context.Background()
	s, err := js.Stream(ctx, stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	var msgs []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		require.NoError(t, err)
		msgs = append(msgs, m)
	}
	return msgs
}

// msgIDs are the messages' Nats-Msg-Id headers, in order.
func msgIDs(msgs []*jetstream.RawStreamMsg) []string {
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.Header.Get(jetstream.MsgIDHeader)
	}
	return ids
}

// committedRuns reads the runs the database holds: run id by slot id.
func committedRuns(t *testing.T, dsn string) map[string]string {
	t.Helper()
	db, err := sqldb.Open(context.Background(), dsn)
	require.NoError(t, err)
	defer db.Close()
	var rows []struct {
		SlotID string `db:"slot_id"`
		RunID  string `db:"run_id"`
	}
	require.NoError(t, db.SelectContext(context.Background(), &rows, `SELECT slot_id, run_id FROM schedule_runs`))
	runs := map[string]string{}
	for _, r := range rows {
		runs[r.SlotID] = r.RunID
	}
	return runs
}

// "ticker run --nats" publishes what it commits — each minute, each run of
// the stored schedules — to the stream once, with Nats-Msg-Id its key,
// each unit's and each schedule's records in their order: a minute on
// <prefix>.minute as tick's JSON (natsjs's layout), a run on
// <prefix>.schedule.<name> with the webhook's body; --nats replaces
// stdout, as --webhook does.
func TestRunPublishesEachCommittedBoundaryAndRunToNATSOnce(t *testing.T) {
	t.Parallel()
	url := natsURL(t)
	for engine, db := range databases(t) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			js := jsOf(t, url)
			prefix, stream := natsPrefix(t, js)
			clock := clockwork.NewFakeClockAt(start) // 12:00:30 UTC
			ok(t, run(t, clock, nil, "schedule", "add", "--db", db, "--name", "poll", "--spec", "@every 2m", "--command", "poll"))
			ok(t, run(t, clock, nil, "schedule", "add", "--db", db, "--name", "billing.eu", "--spec", "@every 3m", "--command", "bill"))
			r := startRun(t, clock, "--db", db, "--units", "minute", "--nats", url, "--nats-prefix", prefix)
			for range 6 { // 12:01 … 12:06, each fired 30 s after its boundary
				require.NoError(t, tick.AdvanceAndWait(context.Background(), clock, time.Minute, r.ticker))
			}
			// The oracles: the minutes by hand, the runs as the database
			// holds them once the passes committed.
			var minutes []string
			for i := 1; i <= 6; i++ {
				minutes = append(minutes, time.Date(2026, 11, 21, 12, i, 0, 0, time.UTC).Format("minute/2006-01-02T15:04:05Z"))
			}
			runs := committedRuns(t, db)
			require.Len(t, runs, 5, "poll at 12:02, 12:04, 12:06; billing.eu at 12:03, 12:06")
			want := len(minutes) + len(runs)
			require.Eventually(t, func() bool { return len(streamMsgs(t, js, stream)) >= want }, 10*time.Second, 10*time.Millisecond,
				"%d records on the stream: %s", want, r.stderr)
			require.Equal(t, cli.ExitOK, r.stop(), r.stderr.String())
			require.Empty(t, r.stdout.String(), "--nats replaces stdout")
			require.Contains(t, r.stderr.String(), "delivering to nats "+url+" stream "+stream+" ("+prefix+".>)")

			msgs := streamMsgs(t, js, stream)
			require.Len(t, msgs, want, "each record once, the stop's drain adding none: %v", msgIDs(msgs))
			gotMinutes, gotRuns := readPublished(t, msgs, prefix, runs)
			require.Equal(t, minutes, gotMinutes, "each minute once, in order")
			require.Len(t, gotRuns["poll"], 3)
			require.Len(t, gotRuns["billing.eu"], 2)
			for name, slots := range gotRuns {
				require.True(t, slices.IsSortedFunc(slots, time.Time.Compare), "%s's runs in order: %v", name, slots)
			}

			s, err := js.Stream(context.Background(), stream)
			require.NoError(t, err)
			require.Equal(t, cli.NATSWindow(200*time.Millisecond, 360, 30*time.Second), s.CachedInfo().Config.Duplicates,
				"created with the window the default flags ask for")
		})
	}
}

// readPublished reads what "ticker run --nats" published under prefix,
// checking each message's subject, id and fields against runs (the run
// id of each slot id, as the database committed them): the minutes'
// keys, and the runs' slots by schedule, in stream order.
func readPublished(t *testing.T, msgs []*jetstream.RawStreamMsg, prefix string, runs map[string]string) (gotMinutes []string, gotRuns map[string][]time.Time) {
	t.Helper()
	gotRuns = map[string][]time.Time{}
	for _, m := range msgs {
		if m.Header.Get(sink.HeaderNATSEvent) == "MinuteHasPassed" {
			// Time as natsjs lays it out: a CloudEvent whose
			// body is the boundary's data, whose id is the
			// record's key.
			require.Equal(t, prefix+".minute", m.Subject)
			var data struct {
				Boundary sink.Time `json:"boundary"`
			}
			require.NoError(t, json.Unmarshal(m.Data, &data), string(m.Data))
			ev := tick.MinuteHasPassed{Passage: tick.Passage{At: data.Boundary.Time}}
			require.Equal(t, ev.ID(), m.Header.Get(jetstream.MsgIDHeader), "Nats-Msg-Id is the record's key")
			gotMinutes = append(gotMinutes, ev.ID())
			continue
		}
		var rec struct {
			Type     string     `json:"type"`
			ID       string     `json:"id"`
			RunID    string     `json:"run_id"`
			Schedule string     `json:"schedule"`
			Slot     *sink.Time `json:"slot"`
		}
		require.NoError(t, json.Unmarshal(m.Data, &rec), string(m.Data))
		rec.Type, rec.ID = m.Header.Get("ce-type"), m.Header.Get("ce-id") // a CloudEvent's body is its data
		require.Equal(t, rec.ID, m.Header.Get(jetstream.MsgIDHeader), "Nats-Msg-Id is the record's key")
		require.Equal(t, rec.Type, m.Header.Get(sink.HeaderNATSEvent))
		switch rec.Type {
		case "ScheduleRun":
			require.Equal(t, runs[rec.ID], rec.RunID, "the run %s the database committed", rec.ID)
			require.Equal(t, map[string]string{"poll": prefix + ".schedule.poll", "billing.eu": prefix + ".schedule.billing%2Eeu"}[rec.Schedule], m.Subject)
			require.Equal(t, schedule.SlotID(rec.Schedule, rec.Slot.Time), rec.ID)
			gotRuns[rec.Schedule] = append(gotRuns[rec.Schedule], rec.Slot.Time)
		default:
			t.Fatalf("unexpected record %s", m.Data)
		}
	}
	return gotMinutes, gotRuns
}

// The duplicate window covers the relay's retries and a hand-over: with
// the default flags, 360 tries of at most 10 s each, the waits between
// them (200 ms doubling to 10 s, 3,542.6 s in all) each up to a 1 s poll
// late, and a 30 s lease: 7,531.6 s, 2h6m rounded up.
func TestTheNATSWindowCoversTheRetriesAndAHandOver(t *testing.T) {
	t.Parallel()
	require.Equal(t, 2*time.Hour+6*time.Minute, cli.NATSWindow(200*time.Millisecond, 360, 30*time.Second))
	// One try, no retry: its ack's wait and the lease, 10 s + 30 s.
	require.Equal(t, time.Minute, cli.NATSWindow(time.Second, 1, 30*time.Second))
	// 2 tries: 2 × 10 s, a 1 s wait a poll late, a 1 h lease.
	require.Equal(t, time.Hour+time.Minute, cli.NATSWindow(time.Second, 2, time.Hour))
}

// A run whose firing did not commit is never published: neither while
// its transaction is open nor after it rolled back; one that commits is,
// once, under its slot id.
func TestANATSRunIsPublishedOnlyWithItsFiring(t *testing.T) {
	t.Parallel()
	url := natsURL(t)
	for engine, dsn := range databases(t) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			js := jsOf(t, url)
			prefix, stream := natsPrefix(t, js)
			db, err := sqldb.Open(ctx, dsn)
			require.NoError(t, err)
			defer db.Close()
			o, err := cli.OpenNATSOutbox(ctx, db, url, prefix, clockwork.NewRealClock(), nil)
			require.NoError(t, err)
			defer o.Close()
			runAt := func(minute int) schedule.Run {
				slot := time.Date(2026, 11, 21, 12, minute, 0, 0, time.UTC)
				return schedule.Run{RunID: "r-" + slot.Format("1504"), SlotID: schedule.SlotID("poll", slot), Schedule: "poll", Slot: slot, FiredAt: slot, Attempt: 1}
			}

			tx, err := db.BeginTxx(ctx, nil)
			require.NoError(t, err)
			require.NoError(t, o.Record(ctx, tx, runAt(5)))
			delivered, left, err := o.Drain(ctx)
			require.NoError(t, err)
			require.Equal(t, [2]int{0, 0}, [2]int{delivered, left}, "an open firing leaves nothing to publish")
			require.Empty(t, streamMsgs(t, js, stream))
			require.NoError(t, tx.Rollback())
			delivered, left, err = o.Drain(ctx)
			require.NoError(t, err)
			require.Equal(t, [2]int{0, 0}, [2]int{delivered, left}, "a rolled-back firing leaves nothing to publish")
			require.Empty(t, streamMsgs(t, js, stream))

			tx, err = db.BeginTxx(ctx, nil)
			require.NoError(t, err)
			require.NoError(t, o.Record(ctx, tx, runAt(6)))
			require.NoError(t, tx.Commit())
			delivered, left, err = o.Drain(ctx)
			require.NoError(t, err)
			require.Equal(t, [2]int{1, 0}, [2]int{delivered, left})
			require.Equal(t, []string{"poll@2026-11-21T12:06:00Z"}, msgIDs(streamMsgs(t, js, stream)), "the committed run alone")
		})
	}
}

// A relay that dies between a publish and its checkpoint leaves the
// record to the next relay of the sink, which publishes it again: the
// server recognises its Nats-Msg-Id and the stream keeps one copy.
func TestARepublishAfterARelayDiedBeforeItsCheckpointIsStoredOnce(t *testing.T) {
	t.Parallel()
	url := natsURL(t)
	for engine, dsn := range databases(t) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			js := jsOf(t, url)
			prefix, stream := natsPrefix(t, js)
			db, err := sqldb.Open(ctx, dsn)
			require.NoError(t, err)
			defer db.Close()

			// The first relay publishes 12:01, then 12:02, and dies right
			// after the server acknowledged 12:02: its context ends
			// before the relay could move its checkpoint past it.
			dying, die := context.WithCancel(ctx)
			defer die()
			first, err := cli.OpenNATSOutbox(ctx, db, url, prefix, clockwork.NewRealClock(), func(send cli.Send) cli.Send {
				return func(ctx context.Context, key, typ string, body []byte) error {
					if err := send(ctx, key, typ, body); err != nil {
						return err
					}
					if key == "poll@2026-11-21T12:02:00Z" {
						die()
						return ctx.Err()
					}
					return nil
				}
			})
			require.NoError(t, err)
			defer first.Close()
			tx, err := db.BeginTxx(ctx, nil)
			require.NoError(t, err)
			for m := 1; m <= 3; m++ {
				slot := time.Date(2026, 11, 21, 12, m, 0, 0, time.UTC)
				require.NoError(t, first.Record(ctx, tx, schedule.Run{RunID: slot.Format("r-1504"), SlotID: schedule.SlotID("poll", slot), Schedule: "poll", Slot: slot, FiredAt: slot, Attempt: 1}))
			}
			require.NoError(t, tx.Commit())
			_, _ = first.Pass(dying) // ends with its context
			require.Equal(t, 2, len(streamMsgs(t, js, stream)), "published up to 12:02")
			b, err := first.Backlog(ctx)
			require.NoError(t, err)
			require.Equal(t, 2, b.Pending, "12:02 published, not checkpointed; 12:03 not published")

			// The next relay of the sink (a restart, or the next holder
			// of the lease) takes over from the checkpoint.
			next, err := cli.OpenNATSOutbox(ctx, db, url, prefix, clockwork.NewRealClock(), nil)
			require.NoError(t, err)
			defer next.Close()
			require.Equal(t, first.Name, next.Name, "one sink, one checkpoint")
			delivered, left, err := next.Drain(ctx)
			require.NoError(t, err)
			require.Equal(t, [2]int{2, 0}, [2]int{delivered, left}, "12:02 again and 12:03")
			require.Equal(t, 3, len(streamMsgs(t, js, stream)), "12:02 stored once, not twice")
			require.Equal(t, []string{"poll@2026-11-21T12:01:00Z", "poll@2026-11-21T12:02:00Z", "poll@2026-11-21T12:03:00Z"},
				msgIDs(streamMsgs(t, js, stream)), "12:02 stored once, in order")
		})
	}
}

// A publish the server did not store (the stream gone) is a refusal: the
// record stays in the outbox, its checkpoint unmoved, and is published
// once the server takes it — nothing committed is lost.
func TestARecordTheNATSServerDidNotStoreIsPublishedLater(t *testing.T) {
	t.Parallel()
	url := natsURL(t)
	ctx := context.Background()
	js := jsOf(t, url)
	prefix, stream := natsPrefix(t, js)
	db, err := sqldb.Open(ctx, filepath.Join(t.TempDir(), "passage.db"))
	require.NoError(t, err)
	defer db.Close()
	clock := clockwork.NewFakeClockAt(start)
	o, err := cli.OpenNATSOutbox(ctx, db, url, prefix, clock, nil)
	require.NoError(t, err)
	defer o.Close()
	s, err := js.Stream(ctx, stream)
	require.NoError(t, err)
	cfg := s.CachedInfo().Config
	require.NoError(t, js.DeleteStream(ctx, stream))

	slot := time.Date(2026, 11, 21, 12, 5, 0, 0, time.UTC)
	tx, err := db.BeginTxx(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, o.Record(ctx, tx, schedule.Run{RunID: "r-1", SlotID: schedule.SlotID("poll", slot), Schedule: "poll", Slot: slot, FiredAt: slot, Attempt: 1}))
	require.NoError(t, tx.Commit())
	res, err := o.Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, [2]int{0, 1}, [2]int{res.Delivered, res.Refused}, "refused: the server stored nothing")
	b, err := o.Backlog(ctx)
	require.NoError(t, err)
	require.Equal(t, [2]int{1, 1}, [2]int{b.Pending, b.Waiting})

	_, err = js.CreateStream(ctx, cfg)
	require.NoError(t, err)
	clock.Advance(time.Second) // the retry's backoff, 200 ms
	res, err = o.Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, res.Delivered)
	require.Equal(t, []string{"poll@2026-11-21T12:05:00Z"}, msgIDs(streamMsgs(t, js, stream)))
}

// Bad input stops "ticker run --nats" at its start, before the database
// is opened: nothing is recorded to publish later, nothing published.
// What the command line gets wrong exits 2; a server that cannot take
// the records, 1.
func TestRunRefusesBadNATSInputAtStart(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--nats", "nats://127.0.0.1:1"}, cli.ExitError, "ticker run: --nats: sink: NATS nats://127.0.0.1:1: connect: nats: no servers available for connection"},
		{[]string{"--nats", "nats://127.0.0.1:1", "--webhook-backoff", "1s", "--webhook-attempts", "5", "--stdout"}, cli.ExitError, "connect: "},
		{[]string{"--nats", "nats://tok3n@127.0.0.1:1"}, cli.ExitError, "sink: NATS nats://…@127.0.0.1:1: connect: "},
		{[]string{"--nats", "nats://127.0.0.1:4222", "--nats-prefix", "passage.*"}, cli.ExitUsage, `ticker run: --nats: subject prefix "passage.*": token "*" holds the wildcard '*': a prefix names subjects, it does not match them`},
		{[]string{"--nats", "nats://127.0.0.1:4222", "--nats-prefix", "passage.>"}, cli.ExitUsage, `token ">" holds the wildcard '>'`},
		{[]string{"--nats", "nats://127.0.0.1:4222", "--nats-prefix", "my passage"}, cli.ExitUsage, "white space"},
		{[]string{"--nats", "nats://127.0.0.1:4222", "--nats-stream", "A.B"}, cli.ExitUsage, `stream name "A.B"`},
		{[]string{"--nats", "http://127.0.0.1:4222"}, cli.ExitUsage, `scheme "http" is not nats, tls, ws or wss`},
		{[]string{"--nats", ""}, cli.ExitUsage, "--nats: empty"},
		{[]string{"--nats-prefix", "acme"}, cli.ExitUsage, "--nats-prefix: shapes the delivery to NATS, and no --nats URL is given"},
		{[]string{"--nats", "nats://127.0.0.1:4222", "--webhook-secret-env", "S"}, cli.ExitUsage, "--webhook-secret-env: signs webhook bodies, and no --webhook is given"},
	} {
		res := run(t, clock, nil, append([]string{"run", "--once", "--db", db}, c.args...)...)
		require.Equal(t, c.code, res.code, "%v: %s", c.args, res.stderr)
		require.Contains(t, res.stderr, c.want, "%v", c.args)
		require.NotContains(t, res.stderr, "tok3n")
		require.Empty(t, res.stdout)
		require.NoFileExists(t, db, "%v: refused before the database is opened", c.args)
	}
}

// An existing stream that keeps message ids for less than the relay's
// retry horizon would store a record published again twice: "ticker run"
// refuses it at its start, naming both windows and the flags behind the
// one it needs, and publishes nothing; the schedule due meanwhile is not
// fired, so nothing waits in the outbox either.
func TestRunRefusesAStreamWithATooShortDuplicateWindow(t *testing.T) {
	t.Parallel()
	url := natsURL(t)
	js := jsOf(t, url)
	prefix, stream := natsPrefix(t, js)
	_, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: stream, Subjects: []string{prefix + ".>"}, Duplicates: time.Second})
	require.NoError(t, err)
	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	ok(t, run(t, clock, nil, "schedule", "add", "--db", db, "--name", "poll", "--spec", "@every 1m", "--command", "poll"))
	clock.Advance(3 * time.Minute) // 12:01, 12:02 and 12:03 due

	res := run(t, clock, nil, "run", "--once", "--db", db, "--units", "minute", "--nats", url, "--nats-prefix", prefix)
	require.Equal(t, cli.ExitError, res.code, res.stderr)
	require.Contains(t, res.stderr, "ticker run: --nats: sink: NATS "+url+": natsjs: duplicate window too short: stream "+stream+" keeps message ids for 1s, less than the 2h6m0s asked for")
	require.Contains(t, res.stderr, "2h6m0s is how long a record may be published again after the server stored it: the relay tries a record up to 360 times (--webhook-attempts), waiting --webhook-backoff 200ms doubled up to 10s between tries and up to 10s for each ack, and a replica takes the lease over after --lease-ttl 30s")
	require.Empty(t, res.stdout)
	require.Empty(t, streamMsgs(t, js, stream), "nothing published")
	require.Zero(t, countRuns(t, db), "nothing fired, so nothing waits to be published")
}
