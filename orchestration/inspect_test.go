package orchestration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/eventstore"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// jobIn says how a job instance ends.
type jobIn struct{ End string }

// job ends as its input says: completes, fails, waits for a signal (then
// completes), or waits forever (until cancelled).
func job(ctx Context, in jobIn) (string, error) {
	switch in.End {
	case "fail":
		return "", errors.New("the job failed")
	case "wait", "cancel":
		got, ok, err := Await[string](ctx, "go", 240*time.Hour)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", errors.New("nobody said go")
		}
		return got, nil
	}
	return "done", nil
}

// inspectionWorld starts instances of job that end each way, and returns
// the IDs it started.
func inspectionWorld(t *testing.T, db *sqlx.DB) (*world, []string) {
	t.Helper()
	ctx := context.Background()
	w := newWorld(t, db, clockwork.NewFakeClockAt(t0), func(e *Engine) { require.NoError(t, Register(e, "job", job)) })
	ends := []string{"complete", "fail", "wait", "cancel", "signal"}
	var ids []string
	for i := range 23 {
		end := ends[(i*7)%len(ends)]
		id := fmt.Sprintf("job-%02d-%s", (i*11)%23, end)
		ids = append(ids, id)
		input := jobIn{End: end}
		if end == "signal" {
			input.End = "wait"
		}
		_, err := Start(ctx, w.e, "job", id, input)
		require.NoError(t, err)
	}
	w.tick()
	for _, id := range ids {
		switch {
		case strings.HasSuffix(id, "cancel"):
			require.NoError(t, w.e.Cancel(ctx, id))
		case strings.HasSuffix(id, "signal"):
			require.NoError(t, w.e.Signal(ctx, id, "go", "now"))
		}
	}
	w.tick()
	slices.Sort(ids)
	return w, ids
}

// bruteForce folds every instance's full history, read one by one.
func bruteForce(t *testing.T, q sqlx.ExtContext, ids []string) (map[string]Status, map[State]int) {
	t.Helper()
	statuses := map[string]Status{}
	counts := map[State]int{Running: 0, Completed: 0, Failed: 0, Cancelled: 0, Stuck: 0}
	for _, id := range ids {
		h, err := ReadHistory(context.Background(), q, id)
		require.NoError(t, err)
		require.NotEmpty(t, h, id)
		st := StatusOf(id, h)
		statuses[id] = st
		counts[st.State]++
	}
	return statuses, counts
}

// readEvery pages through ReadInstances limit a page.
func readEvery(t *testing.T, q sqlx.ExtContext, state State, limit int) []Status {
	t.Helper()
	var all []Status
	after := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 1000, "paging does not end")
		page, more, err := ReadInstances(context.Background(), q, InstanceQuery{After: after, State: state, Limit: limit})
		require.NoError(t, err)
		require.LessOrEqual(t, len(page), limit)
		all = append(all, page...)
		if !more {
			return all
		}
		require.NotEmpty(t, page, "a page that says more follows is not empty")
		after = page[len(page)-1].Instance
	}
}

func TestReadInstancesPagesEveryInstanceOnceByID(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			w, ids := inspectionWorld(t, db.DB)
			// A stream of another kind sorts between and after them.
			store, err := eventstore.Open(ctx, db.DB, decoder)
			require.NoError(t, err)
			for _, stream := range []string{"workflow", "workflow0", "workflows/x", "orders/1"} {
				_, err = store.Append(ctx, stream, eventstore.NoStream, cancelRequested{})
				require.NoError(t, err)
			}
			want, counts := bruteForce(t, db, ids)
			require.Positive(t, counts[Running])
			require.Positive(t, counts[Completed])
			require.Positive(t, counts[Failed])
			require.Positive(t, counts[Cancelled])

			for _, limit := range []int{1, 4, 23, 24, MaxInstancesRead} {
				got := readEvery(t, db, "", limit)
				var gotIDs []string
				for _, st := range got {
					gotIDs = append(gotIDs, st.Instance)
					require.Equal(t, want[st.Instance], st)
					engine, err := w.e.Status(ctx, st.Instance)
					require.NoError(t, err)
					require.Equal(t, engine, st, "ReadInstances folds as Engine.Status does")
				}
				require.Equal(t, ids, gotIDs, "limit %d: every instance once, by ID", limit)
			}
			for _, state := range []State{Running, Completed, Failed, Cancelled, Stuck} {
				var wantIDs, gotIDs []string
				for _, id := range ids {
					if want[id].State == state {
						wantIDs = append(wantIDs, id)
					}
				}
				for _, st := range readEvery(t, db, state, 2) {
					gotIDs = append(gotIDs, st.Instance)
				}
				require.Equal(t, wantIDs, gotIDs, state)
			}
			got, err := CountInstances(ctx, db)
			require.NoError(t, err)
			require.Equal(t, counts, got)
		})
	}
}

// The engine appends one terminal event per instance, but a history that
// holds more (another version's, or written by hand) is in the state of
// the latest, as StatusOf folds it; CountInstances agrees.
func TestCountInstancesTakesEachInstancesLatestState(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			_, ids := inspectionWorld(t, db.DB)
			store, err := eventstore.Open(ctx, db.DB, decoder)
			require.NoError(t, err)
			started := workflowStarted{Workflow: "job", At: t0}
			histories := map[string][]any{
				"twice-stuck-then-completed": {started, workflowStuck{Error: "replay"}, workflowCompleted{}},
				"twice-failed-then-failed":   {started, workflowFailed{Error: "a"}, workflowFailed{Error: "b"}},
				"cancelled-then-signalled":   {started, workflowCancelled{}, signalReceived{Name: "late"}},
				"started-only":               {started, timerScheduled{Seq: 1, Until: t0.Add(time.Hour)}},
				"unknown-event-after-end":    {started, workflowCompleted{}},
			}
			for id, events := range histories {
				_, err := store.Append(ctx, streamOf(id), eventstore.NoStream, events...)
				require.NoError(t, err)
				ids = append(ids, id)
			}
			// An event of a type this package does not know changes nothing.
			_, err = db.ExecContext(ctx, db.Rebind(`INSERT INTO eventstore_events (stream, version, type, data, recorded_at) VALUES (?, 3, 'orchestration.FromTheFuture', '{}', 0)`),
				streamOf("unknown-event-after-end"))
			require.NoError(t, err)
			slices.Sort(ids)

			want, counts := bruteForce(t, db, ids)
			require.Equal(t, Completed, want["twice-stuck-then-completed"].State)
			require.Equal(t, Failed, want["twice-failed-then-failed"].State)
			require.Equal(t, Cancelled, want["cancelled-then-signalled"].State)
			require.Equal(t, Running, want["started-only"].State)
			require.Equal(t, Completed, want["unknown-event-after-end"].State)

			got, err := CountInstances(ctx, db)
			require.NoError(t, err)
			require.Equal(t, counts, got)
			total := 0
			for _, n := range got {
				require.GreaterOrEqual(t, n, 0)
				total += n
			}
			require.Equal(t, len(ids), total, "each instance counted once")
			require.Len(t, readEvery(t, db, "", 5), len(ids))
		})
	}
}

func TestInspectionReadsAnEmptyDatabaseAndCreatesNothing(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			h, err := ReadHistory(ctx, db, "nobody")
			require.NoError(t, err)
			require.Empty(t, h)
			all, more, err := ReadInstances(ctx, db, InstanceQuery{Limit: 10})
			require.NoError(t, err)
			require.Empty(t, all)
			require.False(t, more)
			counts, err := CountInstances(ctx, db)
			require.NoError(t, err)
			require.Equal(t, map[State]int{Running: 0, Completed: 0, Failed: 0, Cancelled: 0, Stuck: 0}, counts)

			tables, err := sqldb.Tables(ctx, db)
			require.NoError(t, err)
			require.Empty(t, tables, "reading created tables")
		})
	}
}

func TestInspectionRejectsBadArguments(t *testing.T) {
	t.Parallel()
	db, _ := sqldbtest.SQLite(t)
	ctx := context.Background()
	for _, limit := range []int{0, -1, MaxInstancesRead + 1} {
		_, _, err := ReadInstances(ctx, db, InstanceQuery{Limit: limit})
		require.ErrorContains(t, err, fmt.Sprintf("limit %d", limit))
	}
	_, err := ReadHistory(ctx, db, "")
	require.Error(t, err)
}
