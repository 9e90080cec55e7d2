package cli_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
)

// backfill runs the slots of a past range that have no run yet and
// publishes each as "ticker run" does, with its planned slot and slot id;
// backfilling again runs nothing twice.
func TestScheduleBackfillPublishesEachRun(t *testing.T) {
	t.Parallel()
	for engine, db := range databases(t) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			clock := clockwork.NewFakeClockAt(start) // 12:00:30
			sched := scheduleOn(t, clock, db)
			ok(t, sched("add", "--name", "poll", "--spec", "@every 10m", "--command", "poll-inbox", "--payload", `{"box": "orders"}`, "--jitter", "5m"))

			b := sched("backfill", "poll", "--from", "2026-11-21T10:55:00Z", "--to", "2026-11-21T11:30:00Z")
			runs := pickRuns(t, ok(t, b), false)
			require.Equal(t, "backfilled 4 runs of poll in (2026-11-21T10:55:00Z, 2026-11-21T11:30:00Z]\n", b.stderr)
			require.Len(t, runs, 4, b.stdout)
			ids := map[string]bool{}
			for i, r := range runs {
				slot := time.Date(2026, 11, 21, 11, 10*i, 0, 0, time.UTC)
				require.Equal(t, "ScheduleRun", r.Type)
				require.Equal(t, "poll@"+slot.Format(time.RFC3339), r.SlotID, "the planned slot id, oldest first")
				require.Equal(t, r.SlotID, r.ID)
				require.True(t, r.Slot.Equal(slot), "the planned slot, without the jitter: %s", r.Raw)
				require.True(t, r.FiredAt.Equal(clock.Now()), r.Raw)
				require.False(t, r.Manual)
				require.Equal(t, 1, r.Attempt)
				require.Equal(t, "poll-inbox", r.Command)
				require.JSONEq(t, `{"box": "orders"}`, string(r.Payload))
				require.False(t, ids[r.RunID], "run ids are fresh")
				ids[r.RunID] = true
			}

			again := sched("backfill", "--from", "2026-11-21T11:00:00Z", "--to", "2026-11-21T11:50:00Z", "poll")
			runs = pickRuns(t, ok(t, again), false)
			require.Equal(t, map[string]int{"poll@2026-11-21T11:40:00Z": 1, "poll@2026-11-21T11:50:00Z": 1}, slotIDs(runs), "the slots run already are left alone")
			require.Equal(t, "backfilled 2 runs of poll in (2026-11-21T11:00:00Z, 2026-11-21T11:50:00Z]\n", again.stderr)

			// Local times are read, and the summary shown, in --tz.
			none := sched("backfill", "poll", "--tz", "Europe/Warsaw", "--from", "2026-11-21T12:00", "--to", "2026-11-21T12:50")
			require.Empty(t, ok(t, none))
			require.Equal(t, "backfilled 0 runs of poll in (2026-11-21T12:00:00+01:00, 2026-11-21T12:50:00+01:00]: no slot in it without a run\n", none.stderr)

			var listed []struct{ Runs int64 }
			require.NoError(t, json.Unmarshal([]byte(ok(t, sched("list", "--json"))), &listed))
			require.Equal(t, int64(0), listed[0].Runs, "backfilled runs are not runs of the plan")
		})
	}
}

// A webhook that refuses a backfilled run no longer undoes it: every run
// is recorded with its slot, and delivered after the commit; the refused
// one, and what its schedule has after it, wait in the outbox, and the
// next command with that webhook (here "ticker run --once") delivers them
// under the same keys. A receiver never sees a run that is not recorded.
func TestScheduleBackfillRecordsEveryRunAndARefusedOneIsDeliveredLater(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string
	refuse := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		id := r.Header.Get(sink.HeaderIdempotency)
		if refuse && id == "poll@2026-11-21T11:20:00Z" {
			http.Error(w, "not now", http.StatusServiceUnavailable)
			return
		}
		got = append(got, id)
	}))
	t.Cleanup(srv.Close)

	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	ok(t, run(t, clock, nil, "schedule", "add", "--db", db, "--name", "poll", "--spec", "@every 10m", "--command", "poll"))
	backfill := []string{"schedule", "backfill", "--db", db, "--from", "2026-11-21T11:00:00Z", "--to", "2026-11-21T11:30:00Z", "--webhook", srv.URL, "poll"}
	r := run(t, clock, nil, backfill...)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Empty(t, r.stdout, "the runs go to the webhook only")
	require.Contains(t, r.stderr, "backfilled 3 runs of poll in (2026-11-21T11:00:00Z, 2026-11-21T11:30:00Z]\n")
	require.Contains(t, r.stderr, "webhooks: delivered 1 record, 2 left in the outbox (1 refused, retried with their streams by the next run)\n")
	require.Equal(t, 3, countRuns(t, db), "every run recorded")

	mu.Lock()
	require.Equal(t, []string{"poll@2026-11-21T11:10:00Z"}, got)
	refuse = false
	mu.Unlock()
	r = run(t, clock, nil, backfill...)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stderr, "no slot in it without a run")
	require.Contains(t, r.stderr, "(1 refused", "not before its backoff ends")
	clock.Advance(time.Second)
	once := run(t, clock, nil, "run", "--once", "--db", db, "--units", "minute", "--webhook", srv.URL)
	require.Equal(t, cli.ExitOK, once.code, once.stderr)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"poll@2026-11-21T11:10:00Z", "poll@2026-11-21T11:20:00Z", "poll@2026-11-21T11:30:00Z"}, got,
		"the schedule's runs in order, each once")
}
