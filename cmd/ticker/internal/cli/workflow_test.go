package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
	"github.com/passage-of-time/passage/eventstore"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/orchestration"
	"github.com/passage-of-time/passage/todolist"
)

var orderStart = time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)

// workflowWorld is an application using the orchestration library on a
// database the commands are run on, its processor driven by a fake clock.
type workflowWorld struct {
	t     *testing.T
	dsn   string
	clock *clockwork.FakeClock
	e     *orchestration.Engine
	p     *todolist.Processor
}

// order charges, registers the charge's release, waits for "shipped" for
// 72 hours and returns its tracking number, or refunds when it never came.
func order(ctx orchestration.Context, id string) (string, error) {
	if _, err := orchestration.Step(ctx, "charge", func(context.Context, orchestration.StepInfo) (string, error) {
		return "ch_1", nil
	}); err != nil {
		return "", err
	}
	orchestration.Compensate(ctx, "release", func(context.Context) error { return nil })
	tracking, shipped, err := orchestration.Await[string](ctx, "shipped", 72*time.Hour)
	if err != nil {
		return "", err
	}
	if shipped {
		return "shipped " + tracking, nil
	}
	if _, err := orchestration.Step(ctx, "refund", func(context.Context, orchestration.StepInfo) (bool, error) {
		return true, nil
	}); err != nil {
		return "", err
	}
	return "refunded", nil
}

// flaky needs a second attempt at reserving, sleeps an hour, takes a new
// id, and then fails for good at paying, undoing the reservation.
func flaky(ctx orchestration.Context, _ struct{ Items int }) (string, error) {
	if _, err := orchestration.Step(ctx, "reserve", func(_ context.Context, info orchestration.StepInfo) (int, error) {
		if info.Attempt == 1 {
			return 0, errors.New("warehouse down")
		}
		return 7, nil
	}, orchestration.WithRetry(orchestration.RetryPolicy{MaxAttempts: 3, Initial: time.Minute, Max: time.Minute})); err != nil {
		return "", err
	}
	orchestration.Compensate(ctx, "unreserve", func(context.Context) error { return nil })
	if err := ctx.Sleep(time.Hour); err != nil {
		return "", err
	}
	_ = ctx.NewID()
	return orchestration.Step(ctx, "pay", func(context.Context, orchestration.StepInfo) (string, error) {
		return "", orchestration.NonRetryable(errors.New("card declined"))
	})
}

func newWorkflowWorld(t *testing.T, dsn string) *workflowWorld {
	t.Helper()
	ctx := context.Background()
	db, err := sqldb.Open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	clock := clockwork.NewFakeClockAt(orderStart)
	e, err := orchestration.New(ctx, db.DB, orchestration.WithClock(clock))
	require.NoError(t, err)
	require.NoError(t, orchestration.Register(e, "order", order))
	require.NoError(t, orchestration.Register(e, "flaky", flaky))
	p, err := e.Processor()
	require.NoError(t, err)
	return &workflowWorld{t, dsn, clock, e, p}
}

func (w *workflowWorld) start(workflow, id string, input any) {
	w.t.Helper()
	_, err := orchestration.Start(context.Background(), w.e, workflow, id, input)
	require.NoError(w.t, err)
}

// advance moves the clock by d and works what is due then.
func (w *workflowWorld) advance(d time.Duration) {
	w.t.Helper()
	w.clock.Advance(d)
	res, err := w.p.Process(context.Background(), w.clock.Now())
	require.NoError(w.t, err)
	require.Zero(w.t, res.Failed+res.Parked, "%+v", res)
}

// cli runs "ticker workflow VERB --db DSN ARGS…".
func (w *workflowWorld) cli(verb string, args ...string) result {
	w.t.Helper()
	return run(w.t, w.clock, nil, append([]string{"workflow", verb, "--db", w.dsn}, args...)...)
}

func (w *workflowWorld) state(id string) orchestration.Status {
	w.t.Helper()
	st, err := w.e.Status(context.Background(), id)
	require.NoError(w.t, err)
	return st
}

// An order whose shipment never came is shown as a timeline: charged,
// waiting three days, timed out, refunded, completed.
func TestWorkflowShowPrintsTheTimelineOfATimedOutOrder(t *testing.T) {
	t.Parallel()
	for engine, dsn := range databases(t) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			w := newWorkflowWorld(t, dsn)
			w.start("order", "order-1", "order-1")
			w.advance(0)
			require.Equal(t, ""+
				"2026-05-01T09:00:00Z  v1  started order (input \"order-1\")\n"+
				"2026-05-01T09:00:00Z  v2  step charge completed (attempt 1): \"ch_1\"\n"+
				"2026-05-01T09:00:00Z  v3  awaiting signal shipped until 2026-05-04T09:00:00Z\n"+
				"order-1 (workflow order, 3 events): running, waiting until 2026-05-04T09:00:00Z\n",
				ok(t, w.cli("show", "order-1")))

			w.advance(72 * time.Hour)
			require.Equal(t, ""+
				"2026-05-01T09:00:00Z  v1  started order (input \"order-1\")\n"+
				"2026-05-01T09:00:00Z  v2  step charge completed (attempt 1): \"ch_1\"\n"+
				"2026-05-01T09:00:00Z  v3  awaiting signal shipped until 2026-05-04T09:00:00Z\n"+
				"2026-05-04T09:00:00Z  v4  await timed out\n"+
				"2026-05-04T09:00:00Z  v5  step refund completed (attempt 1): true\n"+
				"2026-05-04T09:00:00Z  v6  completed: \"refunded\"\n"+
				"order-1 (workflow order, 6 events): completed\n",
				ok(t, w.cli("show", "order-1")))

			// In another zone, and as JSON.
			warsaw := ok(t, w.cli("show", "--tz", "Europe/Warsaw", "order-1"))
			require.Contains(t, warsaw, "2026-05-01T11:00:00+02:00  v3  awaiting signal shipped until 2026-05-04T11:00:00+02:00\n")
			var shown struct {
				ID      string `json:"id"`
				State   string `json:"state"`
				History []struct {
					Version     int64           `json:"version"`
					RecordedAt  string          `json:"recorded_at"`
					Type        string          `json:"type"`
					Description string          `json:"description"`
					Data        json.RawMessage `json:"data"`
				} `json:"history"`
			}
			require.NoError(t, json.Unmarshal([]byte(ok(t, w.cli("show", "--json", "order-1"))), &shown))
			require.Equal(t, "order-1", shown.ID)
			require.Equal(t, "completed", shown.State)
			require.Len(t, shown.History, 6)
			require.Equal(t, "orchestration.AwaitTimedOut", shown.History[3].Type)
			require.Equal(t, "2026-05-04T09:00:00Z", shown.History[3].RecordedAt)
			require.Equal(t, "await timed out", shown.History[3].Description)
			require.JSONEq(t, `{"Output": "refunded"}`, string(shown.History[5].Data))
		})
	}
}

// Retries, sleeps, new ids, a step failing for good, compensations and a
// failed end each read as what they are.
func TestWorkflowShowDescribesRetriesSleepsAndFailures(t *testing.T) {
	t.Parallel()
	w := newWorkflowWorld(t, filepath.Join(t.TempDir(), "passage.db"))
	w.start("flaky", "flaky-1", struct{ Items int }{3})
	w.advance(0)
	show := ok(t, w.cli("show", "flaky-1"))
	require.Contains(t, show, "v2  step reserve attempt 1 failed: warehouse down; retry at 2026-05-01T09:01:")
	require.Regexp(t, `flaky-1 \(workflow flaky, 2 events\): running, waiting until 2026-05-01T09:01:\d\d`, show)
	for range 3 {
		w.advance(time.Minute)
	}
	w.advance(time.Hour)
	show = ok(t, w.cli("show", "flaky-1"))
	lines := strings.Split(strings.TrimSuffix(show, "\n"), "\n")
	var descriptions []string
	for _, l := range lines[:len(lines)-1] {
		_, d, found := strings.Cut(l, "  v")
		require.True(t, found, l)
		_, d, _ = strings.Cut(d, "  ")
		descriptions = append(descriptions, d)
	}
	require.Len(t, descriptions, 9, show)
	require.Equal(t, `started flaky (input {"Items":3})`, descriptions[0])
	require.Equal(t, `step reserve completed (attempt 2): 7`, descriptions[2])
	require.Regexp(t, `^sleeping until 2026-05-01T10:0\d:\d\d(\.\d+)?Z \(timer 0\)$`, descriptions[3])
	require.Equal(t, "timer 0 over", descriptions[4])
	require.Regexp(t, `^new id [0-9a-f]{32}$`, descriptions[5])
	require.Equal(t, "step pay failed for good after 1 attempts: card declined", descriptions[6])
	require.Equal(t, "compensation unreserve done", descriptions[7])
	require.Equal(t, `failed: step "pay" failed after 1 attempts: card declined`, descriptions[8])
	require.Equal(t, `flaky-1 (workflow flaky, 9 events): failed: step "pay" failed after 1 attempts: card declined`, lines[len(lines)-1])
	require.Len(t, lines, 10)
}

// list shows one line per instance, filtered by --state, and as JSON.
func TestWorkflowListFiltersByState(t *testing.T) {
	t.Parallel()
	for engine, dsn := range databases(t) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			w := newWorkflowWorld(t, dsn)
			w.start("order", "order-1", "order-1")
			w.start("flaky", "flaky-1", struct{ Items int }{1})
			w.advance(0)
			w.advance(time.Hour)
			w.advance(2 * time.Hour) // flaky-1 failed, order-1 awaits
			w.start("order", "order-2", "order-2")
			w.advance(0)
			w.advance(71 * time.Hour) // order-1 timed out and completed

			list := ok(t, w.cli("list"))
			require.Regexp(t, `^ID\s+WORKFLOW\s+STATE\s+STARTED\s+WAITING UNTIL\s+ERROR\n`+
				`flaky-1\s+flaky\s+failed\s+2026-05-01T09:00:00Z\s+-\s+step "pay" failed after 1 attempts: card declined\n`+
				`order-1\s+order\s+completed\s+2026-05-01T09:00:00Z\s+-\s+-\n`+
				`order-2\s+order\s+running\s+2026-05-01T12:00:00Z\s+2026-05-04T12:00:00Z\s+-\n$`, list)

			require.Regexp(t, `^ID.*\norder-2\s+order\s+running\s+2026-05-01T12:00:00Z\s+2026-05-04T12:00:00Z\s+-\n$`, ok(t, w.cli("list", "--state", "running")))
			require.Equal(t, "no stuck workflows (of 3)\n", ok(t, w.cli("list", "--state", "stuck")))

			var listed []struct {
				ID           string  `json:"id"`
				Workflow     string  `json:"workflow"`
				State        string  `json:"state"`
				StartedAt    string  `json:"started_at"`
				WaitingUntil *string `json:"waiting_until"`
				Error        string  `json:"error"`
				Events       int64   `json:"events"`
			}
			require.NoError(t, json.Unmarshal([]byte(ok(t, w.cli("list", "--json", "--state", "failed"))), &listed))
			require.Len(t, listed, 1)
			require.Equal(t, "flaky-1", listed[0].ID)
			require.Equal(t, `step "pay" failed after 1 attempts: card declined`, listed[0].Error)
			require.Nil(t, listed[0].WaitingUntil)
			require.Equal(t, int64(9), listed[0].Events)
			require.Equal(t, "[]\n", ok(t, w.cli("list", "--json", "--state", "cancelled")))
		})
	}
}

// An unknown id names it; a database without the event store or without
// workflows says so; neither creates anything.
func TestWorkflowReadCommandsOnOtherDatabasesCreateNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w := newWorkflowWorld(t, filepath.Join(dir, "passage.db"))
	w.start("order", "order-1", "order-1")

	r := w.cli("show", "order-9")
	require.Equal(t, cli.ExitError, r.code)
	require.Contains(t, r.stderr, `ticker workflow: show: no workflow instance "order-9" in `)

	// A ticker's database: no event store.
	ticker := filepath.Join(dir, "ticker.db")
	ok(t, run(t, w.clock, nil, "run", "--once", "--db", ticker, "--units", "hour", "--schedules=false"))
	tables := sqliteTables(t, ticker)
	for _, args := range [][]string{{"list"}, {"show", "order-1"}} {
		r := run(t, w.clock, nil, append([]string{"workflow", args[0], "--db", ticker}, args[1:]...)...)
		require.Equal(t, cli.ExitError, r.code, "%q", args)
		require.Contains(t, r.stderr, "no workflows: the database has no event store tables", "%q", args)
	}
	require.Equal(t, tables, sqliteTables(t, ticker), "no table was created")

	// An event store without workflows.
	events := filepath.Join(dir, "events.db")
	db, err := sqldb.Open(context.Background(), events)
	require.NoError(t, err)
	_, err = eventstore.Open(context.Background(), db.DB, eventstore.NewRegistry())
	require.NoError(t, err)
	require.NoError(t, db.Close())
	r = run(t, w.clock, nil, "workflow", "list", "--db", events)
	require.Equal(t, cli.ExitError, r.code)
	require.Contains(t, r.stderr, "no workflows: the event store holds no workflow/ streams")

	missing := filepath.Join(dir, "typo.db")
	for _, args := range [][]string{{"list"}, {"show", "order-1"}} {
		r := run(t, w.clock, nil, append([]string{"workflow", args[0], "--db", missing}, args[1:]...)...)
		require.Equal(t, cli.ExitError, r.code, "%q", args)
		require.Contains(t, r.stderr, "no such database (nothing was created)", "%q", args)
	}
	_, err = os.Stat(missing)
	require.ErrorIs(t, err, os.ErrNotExist)
}

// A signal sent from the command line wakes an awaiting instance, which
// completes with its payload when the processor next ticks.
func TestWorkflowSignalWakesAnAwaitingInstance(t *testing.T) {
	t.Parallel()
	for engine, dsn := range databases(t) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			w := newWorkflowWorld(t, dsn)
			w.start("order", "order-2", "order-2")
			w.advance(0)
			w.clock.Advance(time.Hour)

			require.Equal(t, "signalled order-2: shipped \"1Z999\" (it runs when a processor next ticks)\n",
				ok(t, w.cli("signal", "order-2", "shipped", "--payload", ` "1Z999" `)))
			require.Equal(t, orchestration.Running, w.state("order-2").State, "the signal only wakes it")
			w.advance(0)
			out, st, err := orchestration.Result[string](context.Background(), w.e, "order-2")
			require.NoError(t, err)
			require.Equal(t, "shipped 1Z999", out)
			require.Equal(t, orchestration.Completed, st.State)

			show := ok(t, w.cli("show", "order-2"))
			require.Contains(t, show, ""+
				"2026-05-01T10:00:00Z  v4  signal shipped received: \"1Z999\"\n"+
				"2026-05-01T10:00:00Z  v5  took signal at version 4\n"+
				"2026-05-01T10:00:00Z  v6  completed: \"shipped 1Z999\"\n"+
				"order-2 (workflow order, 6 events): completed\n")

			late := w.cli("signal", "order-2", "shipped")
			require.Equal(t, cli.ExitError, late.code)
			require.Contains(t, late.stderr, "ticker workflow: signal: order-2 is completed: nothing would read it")
			require.Equal(t, int64(6), w.state("order-2").Events, "nothing was appended")
		})
	}
}

// A cancel sent from the command line unwinds the instance: its
// compensation runs and it ends cancelled.
func TestWorkflowCancelRunsTheCompensations(t *testing.T) {
	t.Parallel()
	for engine, dsn := range databases(t) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			w := newWorkflowWorld(t, dsn)
			w.start("order", "order-3", "order-3")
			w.advance(0)
			w.clock.Advance(time.Hour)

			require.Equal(t, "cancel requested for order-3: its compensations run and it ends cancelled when a processor next ticks\n",
				ok(t, w.cli("cancel", "order-3")))
			w.advance(0)
			require.Equal(t, orchestration.Cancelled, w.state("order-3").State)
			require.Contains(t, ok(t, w.cli("show", "order-3")), ""+
				"2026-05-01T10:00:00Z  v4  cancel requested\n"+
				"2026-05-01T10:00:00Z  v5  compensation release done\n"+
				"2026-05-01T10:00:00Z  v6  cancelled\n"+
				"order-3 (workflow order, 6 events): cancelled\n")
			require.Regexp(t, `(?m)^order-3\s+order\s+cancelled\s`, ok(t, w.cli("list", "--state", "cancelled")))
		})
	}
}

// Signal and cancel check, reading only, that the instance exists before
// they open the engine (which creates its tables): an unknown id, a bad
// payload or a mistyped --db changes nothing.
func TestWorkflowSignalAndCancelErrorsChangeNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w := newWorkflowWorld(t, filepath.Join(dir, "passage.db"))
	w.start("order", "order-1", "order-1")
	w.advance(0)

	for _, args := range [][]string{{"signal", "order-9", "shipped"}, {"cancel", "order-9"}} {
		r := w.cli(args[0], args[1:]...)
		require.Equal(t, cli.ExitError, r.code, "%q", args)
		require.Contains(t, r.stderr, `no workflow instance "order-9" in `, "%q", args)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"signal", "order-1", "shipped", "--payload", `{"tracking": 1Z}`}, `--payload "{\"tracking\": 1Z}": not a JSON value: invalid character`},
		{[]string{"signal", "order-1"}, "give an instance id and a signal name (got 1 arguments)"},
		{[]string{"signal", "order-1", ""}, "the signal name must not be empty"},
		{[]string{"cancel"}, "give exactly one instance id (got 0 arguments)"},
		{[]string{"show", "order-1", "order-2"}, "give exactly one instance id (got 2 arguments)"},
		{[]string{"list", "--state", "asleep"}, `--state "asleep": not running, completed, failed, cancelled or stuck`},
		{[]string{"list", "--state", "running", "--state", "failed"}, "given twice"},
		{[]string{"wait"}, `unknown subcommand "wait"`},
	} {
		r := w.cli(c.args[0], c.args[1:]...)
		require.Equal(t, cli.ExitUsage, r.code, "%q: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, c.want, "%q", c.args)
	}
	require.Equal(t, int64(3), w.state("order-1").Events, "nothing was appended")
	require.Equal(t, orchestration.Running, w.state("order-1").State)

	// A mistyped --db, and a database of the ticker's without workflows.
	missing := filepath.Join(dir, "typo.db")
	ticker := filepath.Join(dir, "ticker.db")
	ok(t, run(t, w.clock, nil, "run", "--once", "--db", ticker, "--units", "hour", "--schedules=false"))
	tables := sqliteTables(t, ticker)
	for _, args := range [][]string{{"signal", "order-1", "shipped"}, {"cancel", "order-1"}} {
		r := run(t, w.clock, nil, append([]string{"workflow", args[0], "--db", missing}, args[1:]...)...)
		require.Equal(t, cli.ExitError, r.code, "%q", args)
		require.Contains(t, r.stderr, "no such database (nothing was created)", "%q", args)
		r = run(t, w.clock, nil, append([]string{"workflow", args[0], "--db", ticker}, args[1:]...)...)
		require.Equal(t, cli.ExitError, r.code, "%q", args)
		require.Contains(t, r.stderr, `no workflow instance "order-1": --db `+ticker+`: no workflows: the database has no event store tables`, "%q", args)
	}
	_, err := os.Stat(missing)
	require.ErrorIs(t, err, os.ErrNotExist)
	require.Equal(t, tables, sqliteTables(t, ticker), "no table was created")
}
