package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/cschleiden/go-workflows/backend"
	gwsqlite "github.com/cschleiden/go-workflows/backend/sqlite"
	"github.com/cschleiden/go-workflows/client"
	"github.com/cschleiden/go-workflows/worker"
	"github.com/cschleiden/go-workflows/workflow"
	"github.com/jonboulle/clockwork"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/orchestration"
	"github.com/passage-of-time/passage/todolist"
)

// workflows: n instances of "start → step → sleep one minute → step →
// complete". Two phases, timed apart: starting (start every instance and run
// it up to its sleep) and waking (the sleeps are over: run the second step
// and complete). Workflows per second is n over both phases, wake-ups per
// second n over the second.
func workflows(ctx context.Context, cfg config, pg *postgres, t *table) error {
	const wfScenario, wakeScenario = "workflows: start → step → sleep → step → complete", "workflows: timer wake-ups (step → complete)"
	n := cfg.workflows
	dir, cleanup, err := tempDir()
	if err != nil {
		return err
	}
	defer cleanup()

	liteWF := t.add(&row{scenario: wfScenario, impl: "passage orchestration, SQLite, fake clock", n: n, unit: "workflows/s"})
	liteWF.passage = liteWF
	liteWake := t.add(&row{scenario: wakeScenario, impl: "passage orchestration, SQLite, fake clock", n: n, unit: "wake-ups/s"})
	liteWake.passage = liteWake
	db, err := sqldb.Open(ctx, dir+"/workflows.db")
	if err != nil {
		return err
	}
	err = passageWorkflows(ctx, db, n, liteWF, liteWake)
	_ = db.Close()
	if err != nil {
		return fmt.Errorf("passage on SQLite: %w", err)
	}

	pgWF := t.add(&row{scenario: wfScenario, impl: "passage orchestration, PostgreSQL, fake clock", n: n, unit: "workflows/s", passage: liteWF})
	pgWake := t.add(&row{scenario: wakeScenario, impl: "passage orchestration, PostgreSQL, fake clock", n: n, unit: "wake-ups/s", passage: liteWake})
	if pg == nil {
		pgWF.skip, pgWake.skip = "PostgreSQL not reachable", "PostgreSQL not reachable"
	} else {
		_, dsn, err := pg.schema(ctx, "orchestration")
		if err != nil {
			return err
		}
		db, err := sqldb.Open(ctx, dsn)
		if err != nil {
			return err
		}
		err = passageWorkflows(ctx, db, n, pgWF, pgWake)
		_ = db.Close()
		if err != nil {
			return fmt.Errorf("passage on PostgreSQL: %w", err)
		}
	}

	gwWF := t.add(&row{scenario: wfScenario, impl: "go-workflows v1.2.0, SQLite backend, real clock", n: n, unit: "workflows/s", passage: liteWF})
	gwWake := t.add(&row{scenario: wakeScenario, impl: "go-workflows v1.2.0, SQLite backend, real clock", n: n, unit: "wake-ups/s", passage: liteWake})
	if err := goWorkflows(ctx, dir+"/go-workflows.db", n, gwWF, gwWake); err != nil {
		return fmt.Errorf("go-workflows: %w", err)
	}
	liteWF.note = "as `orchestration/bench_test.go`: `Start` each instance, one `Process` (first step, sleep), advance the fake clock a minute, one `Process` (second step, complete); batches of 1,000"
	return nil
}

func passageWorkflows(ctx context.Context, db *sqldb.DB, n int, wf, wake *row) error {
	clock := clockwork.NewFakeClockAt(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	e, err := orchestration.New(ctx, db.DB, orchestration.WithClock(clock))
	if err != nil {
		return err
	}
	if err := orchestration.Register(e, "bench", func(ctx orchestration.Context, x int) (int, error) {
		a, err := orchestration.Step(ctx, "a", func(context.Context, orchestration.StepInfo) (int, error) { return x, nil })
		if err != nil {
			return 0, err
		}
		if err := ctx.Sleep(time.Minute); err != nil {
			return 0, err
		}
		return orchestration.Step(ctx, "b", func(context.Context, orchestration.StepInfo) (int, error) { return a + 1, nil })
	}); err != nil {
		return err
	}
	p, err := e.Processor(todolist.WithBatchSize(1000), todolist.WithTimeBudget(0))
	if err != nil {
		return err
	}
	hp := startHeapPeak()
	begin := time.Now()
	for i := range n {
		if _, err := orchestration.Start(ctx, e, "bench", fmt.Sprint("wf-", i), i); err != nil {
			return err
		}
	}
	for claimed := 0; claimed < n; {
		res, err := p.Process(ctx, clock.Now()) // first step, then sleep
		if err != nil {
			return err
		}
		if res.Claimed == 0 {
			return fmt.Errorf("started %d of %d", claimed, n)
		}
		claimed += res.Claimed
	}
	started := time.Since(begin)
	clock.Advance(time.Minute)
	begin = time.Now()
	for claimed := 0; claimed < n; {
		res, err := p.Process(ctx, clock.Now()) // the timers: second step, complete
		if err != nil {
			return err
		}
		if res.Claimed == 0 {
			return fmt.Errorf("woke %d of %d", claimed, n)
		}
		claimed += res.Claimed
	}
	woken := time.Since(begin)
	heap := hp.Stop()
	st, err := e.Status(ctx, fmt.Sprint("wf-", n-1))
	if err != nil {
		return err
	}
	if st.State != orchestration.Completed {
		return fmt.Errorf("last instance %s, not completed", st.State)
	}
	wf.perSec = float64(n) / (started + woken).Seconds()
	wake.perSec = float64(n) / woken.Seconds()
	wf.heap = heap
	return nil
}

// goWorkflows runs the same workflow on go-workflows' SQLite backend with its
// default worker options. Its timers run on the real clock, so every
// instance sleeps until one common instant, chosen far enough ahead that all
// have started by then: the idle wait is not counted.
func goWorkflows(ctx context.Context, path string, n int, wf, wake *row) error {
	b := gwsqlite.NewSqliteBackend(path, gwsqlite.WithBackendOptions(backend.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))))
	defer func() { _ = b.Close() }()
	var stepA, timers, stepB atomic.Int64
	allA, allB := make(chan struct{}), make(chan struct{})
	a := func(_ context.Context, x int) (int, error) {
		if stepA.Add(1) == int64(n) {
			close(allA)
		}
		return x, nil
	}
	bStep := func(_ context.Context, x int) (int, error) {
		if stepB.Add(1) == int64(n) {
			close(allB)
		}
		return x + 1, nil
	}
	var allTimers = make(chan struct{})
	bench := func(ctx workflow.Context, x int, wakeAt time.Time) (int, error) {
		r, err := workflow.ExecuteActivity[int](ctx, workflow.DefaultActivityOptions, a, x).Get(ctx)
		if err != nil {
			return 0, err
		}
		if d := wakeAt.Sub(workflow.Now(ctx)); d > 0 {
			f := workflow.ScheduleTimer(ctx, d)
			if !workflow.Replaying(ctx) && timers.Add(1) == int64(n) {
				close(allTimers)
			}
			if _, err := f.Get(ctx); err != nil {
				return 0, err
			}
		}
		return workflow.ExecuteActivity[int](ctx, workflow.DefaultActivityOptions, bStep, r).Get(ctx)
	}
	w := worker.New(b, nil)
	if err := w.RegisterWorkflow(bench); err != nil {
		return err
	}
	if err := w.RegisterActivity(a); err != nil {
		return err
	}
	if err := w.RegisterActivity(bStep); err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		_ = w.WaitForCompletion()
	}()
	if err := w.Start(wctx); err != nil {
		return err
	}
	c := client.New(b)

	// Far enough ahead for all to start at 40 instances per second.
	lead := time.Second + time.Duration(n)*25*time.Millisecond
	hp := startHeapPeak()
	begin := time.Now()
	wakeAt := begin.Add(lead)
	for i := range n {
		if _, err := c.CreateWorkflowInstance(ctx, client.WorkflowInstanceOptions{InstanceID: fmt.Sprint("wf-", i)}, bench, i, wakeAt); err != nil {
			return err
		}
	}
	if err := wait(ctx, allTimers, 10*time.Minute); err != nil {
		return fmt.Errorf("%d of %d timers scheduled (%d first steps): %w", timers.Load(), n, stepA.Load(), err)
	}
	started := time.Since(begin)
	from := wakeAt
	note := ""
	if now := time.Now(); now.After(wakeAt) {
		from = now
		note = "; the start phase overran the wake-up instant, so the phases overlapped"
	}
	if err := wait(ctx, allB, 10*time.Minute); err != nil {
		return fmt.Errorf("%d of %d second steps: %w", stepB.Load(), n, err)
	}
	for {
		s, err := c.GetStats(ctx)
		if err != nil {
			return err
		}
		if s.ActiveWorkflowInstances == 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	woken := time.Since(from)
	wf.heap = hp.Stop()
	wf.perSec = float64(n) / (started + woken).Seconds()
	wake.perSec = float64(n) / woken.Seconds()
	wf.note = fmt.Sprintf("default worker options (2 pollers each, 200 ms polling); the start phase ends when the last timer was scheduled (%s), the sleep runs on the real clock until a common instant %s after the first start, and the idle wait until then is not counted%s", started.Round(time.Millisecond), lead, note)
	wake.note = "from the common wake-up instant until no instance is active"
	return nil
}
