package cli_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
	"github.com/passage-of-time/passage/tick"
)

func TestWebhookReceiverThatRecoversGetsEveryEventOnceInOrder(t *testing.T) {
	t.Parallel()
	secret := []byte("shared-secret")
	var mu sync.Mutex
	refusals := 3
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if refusals > 0 {
			refusals--
			http.Error(w, "not yet", http.StatusServiceUnavailable)
			return
		}
		if !sink.Verify(secret, body, r.Header.Get(sink.HeaderSignature)) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		got = append(got, r.Header.Get(sink.HeaderIdempotency))
	}))
	t.Cleanup(srv.Close)

	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	env := map[string]string{"HOOK_SECRET": string(secret)}
	args := []string{"run", "--once", "--db", db, "--units", "minute", "--webhook", srv.URL,
		"--webhook-secret-env", "HOOK_SECRET", "--webhook-backoff", "1ms"}

	require.Equal(t, cli.ExitOK, run(t, clock, env, args...).code)
	clock.Advance(3 * time.Minute)
	// Each run records its minutes and delivers until the receiver
	// refuses: the refused record waits, with its stream, for the next.
	for i := range 3 {
		down := run(t, clock, env, args...)
		require.Equal(t, cli.ExitOK, down.code, "a refusal leaves the record for the next run: %s", down.stderr)
		require.Contains(t, down.stderr, "delivered 0 records, 3 left in the outbox (1 refused, retried with their streams by the next run)")
		if i == 0 {
			require.Contains(t, down.stderr, "delivery refused; retried with backoff under the same key")
		} else {
			require.NotContains(t, down.stderr, "delivery refused", "logged once for the record: later refusals are counted")
		}
		clock.Advance(time.Second) // past the backoff
	}
	up := run(t, clock, env, args...)
	require.Equal(t, cli.ExitOK, up.code, up.stderr)
	require.Contains(t, up.stderr, "delivered 3 records")
	require.Empty(t, up.stdout, "with --webhook, stdout carries no events")

	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{
		"minute/2026-11-21T12:01:00Z", "minute/2026-11-21T12:02:00Z", "minute/2026-11-21T12:03:00Z",
	}, got)
}

// A receiver that refuses a run does not undo it: the run is committed
// (in schedule_runs) with its firing, and the receiver gets it later,
// from the outbox, under the same Idempotency-Key (the slot id) and with
// the same body (run id, attempt 1); the minutes, another stream, go on
// meanwhile; every run the receiver took is a run the database holds.
func TestARefusedRunIsCommittedAndDeliveredLaterUnderTheSameKey(t *testing.T) {
	t.Parallel()
	for engine, db := range databases(t) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			recv := newRefusingReceiver(t, 2)
			clock := clockwork.NewFakeClockAt(start)
			// One slot, 12:05, before 12:15: the retries below may need
			// minutes up to 12:12, and a second run of the schedule among
			// them would reach the receiver beside the refused one.
			ok(t, run(t, clock, nil, "schedule", "add", "--db", db, "--name", "poll", "--spec", "@every 10m from 2026-11-21T11:55:00Z", "--command", "poll"))
			r := startRun(t, clock, "--db", db, "--units", "minute", "--webhook", recv.srv.URL, "--webhook-backoff", "1s")
			// Delivery follows each commit on the relay's goroutine, and a
			// retry waits out its backoff on the fake clock: wait for each
			// minute's record before the next minute, then let minutes pass
			// until the refused run was taken.
			for i := range 8 { // 12:01 … 12:08; the run of 12:05 refused twice, then taken
				require.NoError(t, tick.AdvanceAndWait(context.Background(), clock, time.Minute, r.ticker))
				require.Eventually(t, func() bool { m, _, _ := recv.counts(); return m == i+1 }, 10*time.Second, time.Millisecond, "minute 12:0%d: %s", i+1, r.stderr)
			}
			// A retry is due a second or two after its refusal on the fake
			// clock, which only the minutes move; when the record was read
			// late (PostgreSQL's horizon), its retry may need a minute more.
			passed := 8
			for ; passed < 12; passed++ {
				taken := func() bool { _, refusals, taken := recv.counts(); return refusals == 2 && taken == 1 }
				if within(2*time.Second, taken) {
					break
				}
				require.NoError(t, tick.AdvanceAndWait(context.Background(), clock, time.Minute, r.ticker))
			}
			require.Eventually(t, func() bool { _, refusals, taken := recv.counts(); return refusals == 2 && taken == 1 }, 10*time.Second, time.Millisecond,
				"the run of 12:05, refused twice, then taken: %s", r.stderr)
			require.Eventually(t, func() bool { m, _, _ := recv.counts(); return m == passed }, 10*time.Second, time.Millisecond)
			require.Equal(t, cli.ExitOK, r.stop(), r.stderr.String())

			recv.mu.Lock()
			defer recv.mu.Unlock()
			got := recv.got
			require.Len(t, recv.refusedKeys, 2, "refused twice")
			require.Len(t, got, 1, "then taken once, the stop's drain adding nothing: %+v", got)
			require.Equal(t, "poll@2026-11-21T12:05:00Z", got[0].SlotID)
			for _, r := range recv.refusedKeys {
				require.Equal(t, got[0], r, "the same record every time: key, run id, attempt")
			}
			require.Equal(t, 1, got[0].Attempt, "fired once")
			require.Equal(t, 1, strings.Count(r.stderr.String(), "delivery refused; retried with backoff under the same key"), "logged once for the record, not per refusal: %s", r.stderr)
			require.NotContains(t, r.stderr.String(), "schedule run failed", "the firing did not fail")
			require.Len(t, recv.minutes, passed, "each minute once, beside the refusals: %v", recv.minutes)

			var listed []struct{ Runs int64 }
			require.NoError(t, json.Unmarshal([]byte(ok(t, run(t, clock, nil, "schedule", "list", "--db", db, "--json"))), &listed))
			require.Equal(t, int64(1), listed[0].Runs, "the run was committed at its first firing")
			requireRunsInDB(t, db, got[0].RunID)
		})
	}
}

// refusingReceiver is a webhook receiver that takes every minute and
// refuses the first schedule runs it is sent, then takes them: what it
// was sent, under mu.
type refusingReceiver struct {
	srv *httptest.Server

	mu          sync.Mutex
	refuse      int           // how many runs it still refuses
	minutes     []string      // the minutes' Idempotency-Keys
	refusedKeys []scheduleRun // the runs it refused
	got         []scheduleRun // the runs it took
}

// newRefusingReceiver starts a receiver refusing the first refuse runs,
// closed when the test ends.
func newRefusingReceiver(t *testing.T, refuse int) *refusingReceiver {
	t.Helper()
	recv := &refusingReceiver{refuse: refuse}
	recv.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		recv.mu.Lock()
		defer recv.mu.Unlock()
		if r.Header.Get(sink.HeaderEvent) != "ScheduleRun" {
			recv.minutes = append(recv.minutes, r.Header.Get(sink.HeaderIdempotency))
			return
		}
		var run scheduleRun
		if err := json.Unmarshal(body, &run); err != nil || run.ID != r.Header.Get(sink.HeaderIdempotency) {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		if recv.refuse > 0 {
			recv.refuse--
			recv.refusedKeys = append(recv.refusedKeys, run)
			http.Error(w, "not now", http.StatusServiceUnavailable)
			return
		}
		recv.got = append(recv.got, run)
	}))
	t.Cleanup(recv.srv.Close)
	return recv
}

// counts returns how many minutes the receiver took, how many runs it
// refused, and how many it took.
func (recv *refusingReceiver) counts() (int, int, int) {
	recv.mu.Lock()
	defer recv.mu.Unlock()
	return len(recv.minutes), len(recv.refusedKeys), len(recv.got)
}

// within polls cond for at most d and reports whether it held: for a
// test that moves the fake clock on when something has not happened yet.
func within(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}
