package cli_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/outbox"
	"github.com/passage-of-time/passage/tick"
)

// yearAgo is when the old records of these tests begin: a ticker ran on
// the database a year before start, and stopped a day before it.
var yearAgo = start.Add(-365 * 24 * time.Hour)

// writeOldDays writes into dsn's outbox the 365 DayHasPassed records of
// a ticker that ran from yearAgo, each recorded on its day (the
// outbox's clock, as ticker run's is), and returns their keys in order.
func writeOldDays(t *testing.T, dsn string) []string {
	t.Helper()
	ctx := context.Background()
	db, err := sqldb.Open(ctx, dsn)
	require.NoError(t, err)
	defer db.Close()
	clock := clockwork.NewFakeClockAt(yearAgo)
	box, err := outbox.Open(ctx, db.DB, outbox.WithClock(clock))
	require.NoError(t, err)
	var keys []string
	for i := range 365 {
		day := yearAgo.Truncate(24 * time.Hour).Add(time.Duration(i) * 24 * time.Hour)
		ev, err := tick.NewEvent(tick.Day, tick.Passage{At: day, Since: day.Add(-24 * time.Hour), EmittedAt: clock.Now()})
		require.NoError(t, err)
		body, env, err := sink.Marshal(ev)
		require.NoError(t, err)
		require.NoError(t, box.WriteTx(ctx, db.DB, outbox.Record{Stream: "day", Key: env.ID, Type: env.Type, Body: body}))
		keys = append(keys, env.ID)
		clock.Advance(24 * time.Hour)
	}
	return keys
}

// outboxSize is how many records dsn's outbox holds, as the dashboard
// reads it.
func outboxSize(t *testing.T, dsn string) int {
	t.Helper()
	db, err := sqldb.Open(context.Background(), dsn)
	require.NoError(t, err)
	defer db.Close()
	n, _, err := outbox.ReadSize(context.Background(), db)
	require.NoError(t, err)
	return n
}

// receiver is a webhook that takes every request and keeps its
// webhook-id, in the order they came.
type receiver struct {
	srv  *httptest.Server
	mu   sync.Mutex
	keys []string
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.keys = append(r.keys, req.Header.Get(sink.HeaderWebhookID))
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// got returns the keys received so far, each stream's in the order
// they came (streams are delivered in parallel), and forgets them.
func (r *receiver) got() map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	streams := map[string][]string{}
	for _, k := range r.keys {
		stream, _, _ := strings.Cut(k, "/")
		streams[stream] = append(streams[stream], k)
	}
	r.keys = nil
	return streams
}

// A sink added to a database that holds a year of records is offered
// only what is written from when it starts, and the log says where it
// started and how many records it leaves behind; --from beginning gives
// a new sink the year, --from INSTANT what was recorded from then on. A
// sink the database knows resumes whatever --from says, without a word.
func TestANewSinkStartsFromNowUnlessToldOtherwise(t *testing.T) {
	t.Parallel()
	for backend, dsn := range databases(t) {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			old := writeOldDays(t, dsn)
			clock := clockwork.NewFakeClockAt(start)
			now, beginning, instant := newReceiver(t), newReceiver(t), newReceiver(t)
			once := func(args ...string) string {
				r := run(t, clock, nil, append([]string{"run", "--once", "--db", dsn, "--units", "minute", "--outbox-retention", "0"}, args...)...)
				require.Equal(t, cli.ExitOK, r.code, r.stderr)
				return r.stderr
			}

			// The ticker's first run records where its cursor starts and
			// emits nothing: the new sink gets nothing of the year.
			stderr := once("--webhook", now.srv.URL)
			require.Empty(t, now.got())
			require.Equal(t, 1, strings.Count(stderr, "a sink new to the database starts here"), stderr)
			require.Contains(t, stderr, `sink="webhook `+now.srv.URL+` #`)
			require.Contains(t, stderr, "from=now at=2026-11-21T12:00:30Z")
			require.Contains(t, stderr, "not_delivered=365")

			clock.Advance(2 * time.Minute)
			minutes := []string{"minute/2026-11-21T12:01:00Z", "minute/2026-11-21T12:02:00Z"}
			onlyMinutes := map[string][]string{"minute": minutes}
			stderr = once("--webhook", now.srv.URL, "--webhook", beginning.srv.URL, "--from", "beginning")
			require.Equal(t, onlyMinutes, now.got(), "the known sink resumes: only the new minutes")
			require.Equal(t, map[string][]string{"day": old, "minute": minutes}, beginning.got(), "--from beginning: the year and the minutes")
			require.Equal(t, 1, strings.Count(stderr, "level=INFO"), "one line, for the one new sink: %s", stderr)
			require.Contains(t, stderr, `msg="a sink new to the database starts from the oldest record held (--from beginning)" sink="webhook `+beginning.srv.URL+` #`)

			// Recorded at or after the instant: the last 100 days.
			from := yearAgo.Add(265 * 24 * time.Hour).Format(time.RFC3339)
			stderr = once("--webhook", instant.srv.URL, "--from", from)
			require.Equal(t, map[string][]string{"day": old[265:], "minute": minutes}, instant.got())
			require.Contains(t, stderr, "from="+from+" at="+from)
			require.Contains(t, stderr, "not_delivered=265")
		})
	}
}

// "run --once" prunes, while it holds the lease, the records every sink
// passed that are older than --outbox-retention: none with 0, those
// older than a week by default, and says how many on its line.
func TestOncePrunesWhatEverySinkPassed(t *testing.T) {
	t.Parallel()
	for backend, dsn := range databases(t) {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			writeOldDays(t, dsn)
			hook := newReceiver(t)
			clock := clockwork.NewFakeClockAt(start)
			once := func(args ...string) string {
				r := run(t, clock, nil, append([]string{"run", "--once", "--db", dsn, "--units", "minute", "--webhook", hook.srv.URL}, args...)...)
				require.Equal(t, cli.ExitOK, r.code, r.stderr)
				return r.stderr
			}

			require.NotContains(t, once("--outbox-retention", "0"), "pruned")
			require.Equal(t, 365, outboxSize(t, dsn), "0 keeps every record")
			// The last 7 days were recorded less than a week before now
			// (the last a day before it); the 358 before go.
			require.Contains(t, once(), "; delivered 0 records; pruned 358 records older than 168h0m0s (--outbox-retention)\n")
			require.Equal(t, 7, outboxSize(t, dsn))
			require.Contains(t, once("--outbox-retention", "1h"), "; pruned 7 records older than 1h0m0s")
			require.Zero(t, outboxSize(t, dsn))
			require.Empty(t, hook.got(), "the sink started from now: nothing of the year was offered")
		})
	}
}

// The pruner of "ticker run" runs on the replica holding the lease
// alone: a standby told to prune after an hour leaves the year alone
// while another replica holds the lease (which keeps every record), and
// prunes it once the lease is its own; it stops with the run. /metrics
// shows the outbox's size and its oldest record's age, read from the
// database: a standby's are the holder's.
func TestThePrunerRunsOnTheLeaseHolder(t *testing.T) {
	t.Parallel()
	for backend, dsn := range databases(t) {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			writeOldDays(t, dsn)
			hook := newReceiver(t)
			clock := clockwork.NewFakeClockAt(start)
			args := []string{"--db", dsn, "--units", "minute", "--webhook", hook.srv.URL}
			holder := startRun(t, clock, append(args, "--holder", "a", "--outbox-retention", "0")...)
			require.Eventually(t, holder.ticker.HoldsLease, 10*time.Second, time.Millisecond)
			standby := startRun(t, clock, append(args, "--holder", "b", "--outbox-retention", "1h", "--http", "127.0.0.1:0")...)
			defer func() { require.Equal(t, cli.ExitOK, standby.stop(), standby.stderr.String()) }()
			size := func() (records, age float64) {
				m := scrape(t, serverURL(t, standby))
				return value(t, m, "passage_outbox_records", nil), value(t, m, "passage_outbox_oldest_age_seconds", nil)
			}
			records, age := size()
			require.Equal(t, 365.0, records)
			require.Equal(t, start.Sub(yearAgo).Seconds(), age, "the oldest recorded a year before the clock's now")

			// A pruner that ignored the lease would prune at its first poll
			// (a second): two of them pass.
			require.Never(t, func() bool { return outboxSize(t, dsn) < 365 }, 2500*time.Millisecond, 50*time.Millisecond,
				"the standby pruned: %s", standby.stderr.String())
			require.Equal(t, cli.ExitOK, holder.stop(), holder.stderr.String())
			require.NoError(t, tick.AdvanceAndWait(t.Context(), clock, time.Minute, standby.ticker))
			require.True(t, standby.ticker.HoldsLease(), "b took the lease a released")
			require.Eventually(t, func() bool { return outboxSize(t, dsn) <= 1 }, 10*time.Second, 10*time.Millisecond,
				"the year pruned by the new holder, the minute it recorded kept")
			records, age = size()
			require.LessOrEqual(t, records, 1.0)
			require.Less(t, age, time.Hour.Seconds())
			require.NotContains(t, standby.stderr.String(), "level=ERROR")
		})
	}
}

// A negative --outbox-retention, or a --from that is neither beginning,
// now nor an RFC 3339 instant the outbox can record, is a flag error
// naming the flag and what it takes (exit 2), and nothing is opened.
func TestRetentionAndFromAreCheckedBeforeAnythingOpens(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--outbox-retention", "-1s"}, "ticker run: --outbox-retention -1s: must not be negative (0 keeps every record)\n"},
		{[]string{"--from", "yesterday"}, `ticker run: --from "yesterday": want beginning, now or an RFC 3339 instant such as 2026-11-26T09:00:00Z` + "\n"},
		{[]string{"--from", "2026-11-26"}, `ticker run: --from "2026-11-26": want beginning, now or an RFC 3339 instant`},
		{[]string{"--from", "Beginning"}, `ticker run: --from "Beginning": want beginning, now`},
		{[]string{"--from", "2300-01-01T00:00:00Z"}, `ticker run: --from "2300-01-01T00:00:00Z": outside the years the outbox records (1677 to 2262)`},
		{[]string{"--outbox-retention", "a week"}, `invalid value "a week" for flag -outbox-retention: parse error`},
	} {
		r := run(t, clock, nil, append([]string{"run", "--once", "--db", db}, c.args...)...)
		require.Equal(t, cli.ExitUsage, r.code, "%v: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, c.want, c.args)
		_, err := os.Stat(db)
		require.ErrorIs(t, err, os.ErrNotExist, "%v opened the database", c.args)
	}
}
