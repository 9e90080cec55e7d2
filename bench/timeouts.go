package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/todolist"
)

// timeouts: n orders all fall due at one instant; how fast does each
// implementation run the n timeout actions (a no-op that counts)?
//
// Peak heap is measured from before adding, counting what stays live after
// it (timers and jobs held in memory) but not its garbage.
//
// The throughput is n divided by the time from the due instant — or from the
// end of adding, when that is later — until the last action has run and its
// completion is durable (the to-do item deleted, River's job marked
// completed). Adding is timed separately and shown in the notes.
func timeouts(ctx context.Context, cfg config, pg *postgres, t *table) error {
	const scenario = "timeouts"
	n := cfg.timeouts

	floor := t.add(&row{scenario: scenario, impl: "floor: `time.AfterFunc`, one timer per order (not durable)", n: n, unit: "timeouts/s"})
	if err := afterFuncTimeouts(ctx, n, cfg.gocronLead, floor); err != nil {
		return err
	}
	floor.floor = floor

	dir, cleanup, err := tempDir()
	if err != nil {
		return err
	}
	defer cleanup()
	lite := t.add(&row{scenario: scenario, impl: "passage todolist, SQLite", n: n, unit: "timeouts/s", floor: floor})
	lite.passage = lite
	db, err := sqldb.Open(ctx, dir+"/timeouts.db")
	if err != nil {
		return err
	}
	err = passageTimeouts(ctx, db, n, lite)
	_ = db.Close()
	if err != nil {
		return fmt.Errorf("passage on SQLite: %w", err)
	}

	pgRow := t.add(&row{scenario: scenario, impl: "passage todolist, PostgreSQL", n: n, unit: "timeouts/s", floor: floor})
	pgRow.passage = pgRow
	defaultRow := t.add(&row{scenario: scenario, impl: "River, PostgreSQL, default polling (FetchPollInterval 1 s, FetchCooldown 100 ms)", n: cfg.riverDefault, unit: "timeouts/s", passage: pgRow, floor: floor})
	tunedRow := t.add(&row{scenario: scenario, impl: fmt.Sprintf("River, PostgreSQL, tuned polling (FetchPollInterval %s, FetchCooldown %s)", cfg.riverPoll, cfg.riverCool), n: n, unit: "timeouts/s", passage: pgRow, floor: floor})
	availRow := t.add(&row{scenario: scenario, impl: "River, PostgreSQL, tuned polling, jobs inserted available (no `ScheduledAt`: River's best case, not a deadline)", n: n, unit: "jobs/s", passage: pgRow, floor: floor})
	if pg == nil {
		for _, r := range []*row{pgRow, defaultRow, tunedRow, availRow} {
			r.skip = "PostgreSQL not reachable"
		}
	} else {
		_, dsn, err := pg.schema(ctx, "todolist")
		if err != nil {
			return err
		}
		db, err := sqldb.Open(ctx, dsn)
		if err != nil {
			return err
		}
		err = passageTimeouts(ctx, db, n, pgRow)
		_ = db.Close()
		if err != nil {
			return fmt.Errorf("passage on PostgreSQL: %w", err)
		}
		if err := riverTimeouts(ctx, pg, cfg.riverDefault, cfg.riverWork, 0, 0, true, defaultRow); err != nil {
			return fmt.Errorf("River, default polling: %w", err)
		}
		if err := riverTimeouts(ctx, pg, n, cfg.riverWork, cfg.riverPoll, cfg.riverCool, true, tunedRow); err != nil {
			return fmt.Errorf("River, tuned polling: %w", err)
		}
		if err := riverTimeouts(ctx, pg, n, cfg.riverWork, cfg.riverPoll, cfg.riverCool, false, availRow); err != nil {
			return fmt.Errorf("River, available jobs: %w", err)
		}
	}

	g := t.add(&row{scenario: scenario, impl: "gocron/v2, one `OneTimeJob` per order (not durable)", n: n, unit: "timeouts/s", passage: lite, floor: floor})
	return gocronTimeouts(ctx, n, cfg.gocronLead, g)
}

// passageTimeouts adds n items due now with one AddMany (one transaction),
// then works them with one processor, Process called until nothing is due.
func passageTimeouts(ctx context.Context, db *sqldb.DB, n int, r *row) error {
	l, err := todolist.Open(ctx, db.DB, "orders")
	if err != nil {
		return err
	}
	var done atomic.Int64
	p, err := todolist.NewProcessor(l, func(context.Context, todolist.Item) error {
		done.Add(1)
		return nil
	}, todolist.WithTimeBudget(0))
	if err != nil {
		return err
	}
	hp := heapBaseline()
	due := time.Now()
	begin := time.Now()
	items := make([]todolist.NewItem, n)
	for i := range items {
		items[i] = todolist.NewItem{ID: fmt.Sprintf("order-%09d", i), Due: due}
	}
	if err := l.AddMany(ctx, items); err != nil { // in one transaction
		return err
	}
	added := time.Since(begin)

	hp.start()
	begin = time.Now()
	for done.Load() < int64(n) {
		res, err := p.Process(ctx, time.Now())
		if err != nil {
			return err
		}
		if res.Claimed == 0 {
			return fmt.Errorf("nothing due after %d of %d", done.Load(), n)
		}
	}
	elapsed := time.Since(begin)
	r.heap = hp.Stop()
	r.perSec = float64(n) / elapsed.Seconds()
	r.note = fmt.Sprintf("added with one `AddMany`: %s items/s; worked by one processor, `Process` until done, batches of %d", count(int(float64(n)/added.Seconds())), todolist.DefaultBatchSize)
	return nil
}

type timeoutArgs struct {
	Order int `json:"order"`
}

func (timeoutArgs) Kind() string { return "order_timeout" }

type timeoutWorker struct {
	river.WorkerDefaults[timeoutArgs]
	done   atomic.Int64
	target atomic.Int64
	all    chan struct{}
}

func (w *timeoutWorker) Work(context.Context, *river.Job[timeoutArgs]) error {
	if w.done.Add(1) == w.target.Load() {
		close(w.all)
	}
	return nil
}

// riverTimeouts runs a River client (zero poll and cooldown: River's
// defaults) on a fresh schema, waits until a first scheduled job has run
// (a leader is elected, its scheduler runs), then inserts n jobs with
// InsertMany — scheduled at the insert's start, or available at once when
// scheduled is false — and waits until all are completed in the database.
func riverTimeouts(ctx context.Context, pg *postgres, n, workers int, poll, cooldown time.Duration, scheduled bool, r *row) error {
	schema, dsn, err := pg.schema(ctx, "river")
	if err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return err
	}
	defer pool.Close()
	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Schema: schema})
	if err != nil {
		return err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	w := &timeoutWorker{all: make(chan struct{})}
	w.target.Store(1)
	ws := river.NewWorkers()
	if err := river.AddWorkerSafely(ws, w); err != nil {
		return err
	}
	client, err := river.NewClient(driver, &river.Config{
		Schema:            schema,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: workers}},
		Workers:           ws,
		FetchPollInterval: poll,
		FetchCooldown:     cooldown,
		Logger:            slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return err
	}
	if err := client.Start(ctx); err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = client.Stop(sctx)
	}()
	// The warm-up job.
	if _, err := client.Insert(ctx, timeoutArgs{Order: -1}, &river.InsertOpts{ScheduledAt: time.Now()}); err != nil {
		return err
	}
	if err := wait(ctx, w.all, time.Minute); err != nil {
		return fmt.Errorf("warm-up job: %w", err)
	}
	w.all = make(chan struct{})
	w.target.Store(int64(n) + 1)

	hp := heapBaseline()
	begin := time.Now()
	params := make([]river.InsertManyParams, n)
	for i := range params {
		params[i] = river.InsertManyParams{Args: timeoutArgs{Order: i}}
		if scheduled {
			params[i].InsertOpts = &river.InsertOpts{ScheduledAt: begin}
		}
	}
	if _, err := client.InsertMany(ctx, params); err != nil {
		return fmt.Errorf("InsertMany: %w", err)
	}
	params = nil
	added := time.Since(begin)
	hp.start()
	begin = time.Now()
	if err := wait(ctx, w.all, 10*time.Minute); err != nil {
		return fmt.Errorf("%d of %d jobs ran: %w", w.done.Load()-1, n, err)
	}
	ran := time.Since(begin)
	for {
		var left int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+schema+`.river_job WHERE state <> 'completed'`).Scan(&left); err != nil {
			return err
		}
		if left == 0 {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	elapsed := time.Since(begin)
	r.heap = hp.Stop()
	r.perSec = float64(n) / elapsed.Seconds()
	what, how := "jobs scheduled at the insert's start", "; scheduled jobs become available through River's scheduler, which runs every 5 s (not configurable)"
	if !scheduled {
		what, how = "available jobs", ""
	}
	r.note = fmt.Sprintf("`InsertMany` of %s: %s jobs/s; all ran %s after the insert, all marked completed after %s (MaxWorkers %d%s)",
		what, count(int(float64(n)/added.Seconds())), ran.Round(time.Millisecond), elapsed.Round(time.Millisecond), workers, how)
	return nil
}

// gocronTimeouts adds n one-time jobs due lead after it begins and measures
// from then (or from the end of adding, if later) until all have run.
func gocronTimeouts(ctx context.Context, n int, lead time.Duration, r *row) error {
	var done atomic.Int64
	all := make(chan struct{})
	var last atomic.Int64
	hp := heapBaseline()
	s, err := gocron.NewScheduler()
	if err != nil {
		return err
	}
	s.Start()
	begin := time.Now()
	due := begin.Add(lead)
	for range n {
		_, err := s.NewJob(gocron.OneTimeJob(gocron.OneTimeJobStartDateTime(due)), gocron.NewTask(func() {
			if done.Add(1) == int64(n) {
				last.Store(time.Now().UnixNano())
				close(all)
			}
		}))
		if err != nil {
			_ = s.Shutdown()
			return err
		}
	}
	added := time.Since(begin)
	hp.start()
	err = wait(ctx, all, lead+10*time.Minute)
	r.heap = hp.Stop()
	_ = s.Shutdown()
	if err != nil {
		return fmt.Errorf("%d of %d jobs ran: %w", done.Load(), n, err)
	}
	from := due
	note := ""
	if end := begin.Add(added); end.After(due) {
		from = end
		note = " (adding overran the due instant: measured from the end of adding)"
	}
	r.perSec = float64(n) / time.Unix(0, last.Load()).Sub(from).Seconds()
	r.note = fmt.Sprintf("added with `NewJob` (`OneTimeJobStartDateTime`): %s jobs/s; all due at one instant%s", count(int(float64(n)/added.Seconds())), note)
	return nil
}

// afterFuncTimeouts is the floor: n timers of the runtime, due lead after it
// begins, nothing stored.
func afterFuncTimeouts(ctx context.Context, n int, lead time.Duration, r *row) error {
	var done atomic.Int64
	all := make(chan struct{})
	var last atomic.Int64
	hp := heapBaseline()
	begin := time.Now()
	due := begin.Add(lead)
	timers := make([]*time.Timer, n)
	for i := range timers {
		timers[i] = time.AfterFunc(time.Until(due), func() {
			if done.Add(1) == int64(n) {
				last.Store(time.Now().UnixNano())
				close(all)
			}
		})
	}
	added := time.Since(begin)
	hp.start()
	err := wait(ctx, all, lead+time.Minute)
	r.heap = hp.Stop()
	if err != nil {
		return err
	}
	from := due
	if end := begin.Add(added); end.After(due) {
		from = end
	}
	r.perSec = float64(n) / time.Unix(0, last.Load()).Sub(from).Seconds()
	r.note = fmt.Sprintf("%s timers/s added; all due at one instant", count(int(float64(n)/added.Seconds())))
	return nil
}

var errTimeout = errors.New("timed out")

func wait(ctx context.Context, ch <-chan struct{}, limit time.Duration) error {
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-t.C:
		return errTimeout
	case <-ctx.Done():
		return ctx.Err()
	}
}
