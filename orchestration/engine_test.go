package orchestration

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/todolist"
)

var t0 = time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)

// world is one process: an engine, its processor, and a fake clock.
type world struct {
	t     *testing.T
	db    *sqlx.DB
	clock *clockwork.FakeClock
	e     *Engine
	p     *todolist.Processor
}

func newWorld(t *testing.T, db *sqlx.DB, clock *clockwork.FakeClock, register func(*Engine), opts ...Option) *world {
	t.Helper()
	e, err := New(context.Background(), db, append([]Option{WithClock(clock)}, opts...)...)
	require.NoError(t, err)
	register(e)
	p, err := e.Processor(todolist.WithBackoff(time.Second, time.Minute))
	require.NoError(t, err)
	return &world{t, db, clock, e, p}
}

// tick works what is due now, as a MinuteHasPassed would.
func (w *world) tick() todolist.Result {
	w.t.Helper()
	res, err := w.p.Process(context.Background(), w.clock.Now())
	require.NoError(w.t, err)
	return res
}

// runUntilQuiet jumps the clock from wake-up to wake-up (at most until
// end), working each, until nothing is due.
func (w *world) runUntilQuiet(end time.Time) {
	w.t.Helper()
	for range 100_000 {
		w.tick()
		due, err := w.e.list.Due(context.Background(), end, 1)
		require.NoError(w.t, err)
		if len(due) == 0 {
			return
		}
		if at := due[0].NextAttempt; at.After(w.clock.Now()) {
			w.clock.Advance(at.Sub(w.clock.Now()))
		}
	}
	w.t.Fatal("the instances never settled")
}

// effects counts side effects by step name.
type effects struct {
	mu sync.Mutex
	n  map[string]int
}

func (f *effects) do(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == nil {
		f.n = map[string]int{}
	}
	f.n[name]++
}

func (f *effects) count(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n[name]
}

type orderIn struct {
	ID     string
	Amount int
}

type orderOut struct {
	Outcome string
	Charge  string
}

// orderWorkflow: charge the card; wait for shipping or 3 days; if nothing
// came, refund and tell the customer.
func orderWorkflow(fx *effects) func(Context, orderIn) (orderOut, error) {
	return func(ctx Context, in orderIn) (orderOut, error) {
		charge, err := Step(ctx, "charge", func(_ context.Context, info StepInfo) (string, error) {
			fx.do("charge")
			return "ch_" + info.Key, nil
		})
		if err != nil {
			return orderOut{}, err
		}
		tracking, shipped, err := Await[string](ctx, "shipped", 72*time.Hour)
		if err != nil {
			return orderOut{}, err
		}
		if shipped {
			return orderOut{Outcome: "shipped " + tracking, Charge: charge}, nil
		}
		if _, err := Step(ctx, "refund", func(context.Context, StepInfo) (bool, error) { fx.do("refund"); return true, nil }); err != nil {
			return orderOut{}, err
		}
		if _, err := Step(ctx, "notify", func(context.Context, StepInfo) (bool, error) { fx.do("notify"); return true, nil }); err != nil {
			return orderOut{}, err
		}
		return orderOut{Outcome: "refunded", Charge: charge}, nil
	}
}

func TestAnOrderTimesOutOrShips(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			fx := &effects{}
			w := newWorld(t, db.DB, clockwork.NewFakeClockAt(t0), func(e *Engine) {
				require.NoError(t, Register(e, "order", orderWorkflow(fx)))
			})
			_, err := Start(ctx, w.e, "order", "o-1", orderIn{"o-1", 100})
			require.NoError(t, err)
			_, err = Start(ctx, w.e, "order", "o-2", orderIn{"o-2", 50})
			require.NoError(t, err)
			again, err := Start(ctx, w.e, "order", "o-1", orderIn{"o-1", 999})
			require.NoError(t, err, "starting an id twice is a no-op")
			require.Equal(t, "order", again.Workflow)

			w.tick()
			st, err := w.e.Status(ctx, "o-1")
			require.NoError(t, err)
			require.Equal(t, Running, st.State)
			require.True(t, st.WaitingUntil.Equal(t0.Add(72*time.Hour)), "waiting for shipping until %s", st.WaitingUntil)

			w.clock.Advance(24 * time.Hour)
			require.NoError(t, w.e.Signal(ctx, "o-2", "shipped", "TRACK-9"))
			w.runUntilQuiet(t0.Add(30 * 24 * time.Hour))

			out, st, err := Result[orderOut](ctx, w.e, "o-1")
			require.NoError(t, err)
			require.Equal(t, "refunded", out.Outcome)
			require.Equal(t, Completed, st.State)
			out2, _, err := Result[orderOut](ctx, w.e, "o-2")
			require.NoError(t, err)
			require.Equal(t, "shipped TRACK-9", out2.Outcome)
			require.Equal(t, 2, fx.count("charge"), "each charge ran once")
			require.Equal(t, 1, fx.count("refund"))
			require.Equal(t, 1, fx.count("notify"))
			require.ErrorIs(t, w.e.Signal(ctx, "nope", "shipped", nil), ErrUnknownInstance)
		})
	}
}

// steps is a workflow of n steps with a one-minute sleep between each.
func steps(fx *effects, n int) func(Context, int) (int, error) {
	return func(ctx Context, _ int) (int, error) {
		sum := 0
		for i := range n {
			v, err := Step(ctx, fmt.Sprintf("step-%d", i), func(context.Context, StepInfo) (int, error) {
				fx.do(fmt.Sprintf("step-%d", i))
				return i, nil
			})
			if err != nil {
				return 0, err
			}
			sum += v
			if err := ctx.Sleep(time.Minute); err != nil {
				return 0, err
			}
		}
		return sum, nil
	}
}

var errCrash = errors.New("injected crash")

// A crash before any append of an execution (the process dies with the
// step's side effect done but its result not recorded, or between two
// recordings): the instance resumes, and no step runs again once its
// result was recorded.
func TestACrashAtEveryAppendResumesWithoutRepeatingARecordedStep(t *testing.T) {
	t.Parallel()
	const n = 5
	for crashAt := 1; crashAt <= 2*n+2; crashAt++ {
		t.Run(fmt.Sprint(crashAt), func(t *testing.T) {
			t.Parallel()
			db, _ := sqldbtest.SQLite(t)
			fx := &effects{}
			clock := clockwork.NewFakeClockAt(t0)
			reg := func(e *Engine) { require.NoError(t, Register(e, "steps", steps(fx, n))) }
			w := newWorld(t, db.DB, clock, reg)
			_, err := Start(context.Background(), w.e, "steps", "i", 0)
			require.NoError(t, err)
			appends := 0
			lost := "" // the step whose result the crash kept from being recorded
			w.e.fault = func(events []any) error {
				appends++
				if appends != crashAt {
					return nil
				}
				for _, e := range events {
					if s, ok := e.(stepCompleted); ok {
						lost = s.Name
					}
				}
				return errCrash
			}
			// The crashed tick's error is what a dead process leaves: the
			// item comes back after its lease.
			_, _ = w.p.Process(context.Background(), clock.Now())
			for range 2 * n {
				clock.Advance(time.Minute)
				_, _ = w.p.Process(context.Background(), clock.Now())
			}
			// A new process picks up after the lease.
			clock.Advance(time.Hour)
			w2 := newWorld(t, db.DB, clock, reg)
			w2.runUntilQuiet(t0.Add(24 * time.Hour))
			out, st, err := Result[int](context.Background(), w2.e, "i")
			require.NoError(t, err, "%+v", st)
			require.Equal(t, n*(n-1)/2, out)
			for i := range n {
				name := fmt.Sprintf("step-%d", i)
				want := 1
				if name == lost {
					want = 2 // at least once: its side effect ran, its result was lost
				}
				require.Equal(t, want, fx.count(name), "%s (crash at append %d, lost %q)", name, crashAt, lost)
			}
			require.LessOrEqual(t, appends, 4*n+4)
		})
	}
}

func TestAMonthLongWorkflowRunsInMilliseconds(t *testing.T) {
	t.Parallel()
	db, _ := sqldbtest.SQLite(t)
	fx := &effects{}
	clock := clockwork.NewFakeClockAt(t0)
	w := newWorld(t, db.DB, clock, func(e *Engine) {
		require.NoError(t, Register(e, "daily", func(ctx Context, days int) (string, error) {
			start := ctx.Now()
			for d := range days {
				if _, err := Step(ctx, "report", func(context.Context, StepInfo) (int, error) { fx.do("report"); return d, nil }); err != nil {
					return "", err
				}
				if err := ctx.SleepUntil(start.Add(time.Duration(d+1) * 24 * time.Hour)); err != nil {
					return "", err
				}
			}
			return fmt.Sprintf("%d days from %s to %s", days, start.Format(time.DateOnly), ctx.Now().Format(time.DateOnly)), nil
		}))
	})
	began := time.Now()
	_, err := Start(context.Background(), w.e, "daily", "month", 30)
	require.NoError(t, err)
	w.runUntilQuiet(t0.Add(60 * 24 * time.Hour))
	out, _, err := Result[string](context.Background(), w.e, "month")
	require.NoError(t, err)
	require.Equal(t, "30 days from 2026-05-01 to 2026-05-31", out)
	require.Equal(t, 30, fx.count("report"))
	t.Logf("a month-long workflow in %s of wall time", time.Since(began).Round(time.Millisecond))
}

func TestAChangedWorkflowIsStuckNamingBothSteps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := sqldbtest.SQLite(t)
	clock := clockwork.NewFakeClockAt(t0)
	fx := &effects{}
	w := newWorld(t, db.DB, clock, func(e *Engine) { require.NoError(t, Register(e, "steps", steps(fx, 3))) })
	_, err := Start(ctx, w.e, "steps", "i", 0)
	require.NoError(t, err)
	w.tick() // step-0 done, sleeping
	require.NoError(t, w.e.Replay(ctx, "i"), "the same code replays cleanly")

	// A deploy renames the first step.
	renamed := func(ctx Context, _ int) (int, error) {
		if _, err := Step(ctx, "first", func(context.Context, StepInfo) (int, error) { return 0, nil }); err != nil {
			return 0, err
		}
		return 0, ctx.Sleep(time.Minute)
	}
	w2 := newWorld(t, db.DB, clock, func(e *Engine) { require.NoError(t, Register(e, "steps", renamed)) })
	err = w2.e.Replay(ctx, "i")
	require.ErrorIs(t, err, ErrNondeterministic)
	require.ErrorContains(t, err, `the code asks for Step "first" where the history (event 1 of its decisions) has Step "step-0"`)
	clock.Advance(time.Minute)
	w2.tick()
	st, err := w2.e.Status(ctx, "i")
	require.NoError(t, err)
	require.Equal(t, Stuck, st.State)
	require.Contains(t, st.Error, `Step "first"`)
	require.Contains(t, st.Error, `Step "step-0"`)
}

func TestFailuresRetryThenCompensateInReverse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := sqldbtest.SQLite(t)
	clock := clockwork.NewFakeClockAt(t0)
	var undone []string
	attempts := 0
	w := newWorld(t, db.DB, clock, func(e *Engine) {
		require.NoError(t, Register(e, "saga", func(ctx Context, _ int) (int, error) {
			if _, err := Step(ctx, "reserve", func(context.Context, StepInfo) (int, error) { return 1, nil }); err != nil {
				return 0, err
			}
			Compensate(ctx, "release", func(context.Context) error { undone = append(undone, "release"); return nil })
			if _, err := Step(ctx, "charge", func(context.Context, StepInfo) (int, error) { return 2, nil }); err != nil {
				return 0, err
			}
			Compensate(ctx, "refund", func(context.Context) error { undone = append(undone, "refund"); return nil })
			_, err := Step(ctx, "ship", func(_ context.Context, info StepInfo) (int, error) {
				attempts++
				require.Equal(t, attempts, info.Attempt)
				return 0, errors.New("carrier down")
			}, WithRetry(RetryPolicy{MaxAttempts: 3, Initial: time.Minute, Max: time.Hour}))
			return 0, err
		}))
	})
	_, err := Start(ctx, w.e, "saga", "s", 0)
	require.NoError(t, err)
	w.runUntilQuiet(t0.Add(24 * time.Hour))
	_, st, err := Result[int](ctx, w.e, "s")
	require.ErrorContains(t, err, `step "ship" failed after 3 attempts: carrier down`)
	require.Equal(t, Failed, st.State)
	require.Equal(t, 3, attempts, "retried with durable backoff, then failed")
	require.Equal(t, []string{"refund", "release"}, undone, "compensations in reverse")

	// A non-retryable error fails at once.
	calls := 0
	require.NoError(t, Register(w.e, "once", func(ctx Context, _ int) (int, error) {
		return Step(ctx, "validate", func(context.Context, StepInfo) (int, error) {
			calls++
			return 0, NonRetryable(errors.New("card declined"))
		})
	}))
	_, err = Start(ctx, w.e, "once", "n", 0)
	require.NoError(t, err)
	w.runUntilQuiet(t0.Add(48 * time.Hour))
	_, _, err = Result[int](ctx, w.e, "n")
	require.ErrorContains(t, err, "card declined")
	require.Equal(t, 1, calls)
}

func TestCancelRunsCompensationsAndEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := sqldbtest.SQLite(t)
	clock := clockwork.NewFakeClockAt(t0)
	var undone []string
	w := newWorld(t, db.DB, clock, func(e *Engine) {
		require.NoError(t, Register(e, "long", func(ctx Context, _ int) (int, error) {
			if _, err := Step(ctx, "book", func(context.Context, StepInfo) (int, error) { return 1, nil }); err != nil {
				return 0, err
			}
			Compensate(ctx, "unbook", func(context.Context) error { undone = append(undone, "unbook"); return nil })
			return 0, ctx.Sleep(30 * 24 * time.Hour)
		}))
	})
	_, err := Start(ctx, w.e, "long", "c", 0)
	require.NoError(t, err)
	w.tick()
	require.NoError(t, w.e.Cancel(ctx, "c"))
	w.tick()
	st, err := w.e.Status(ctx, "c")
	require.NoError(t, err)
	require.Equal(t, Cancelled, st.State)
	require.Equal(t, []string{"unbook"}, undone)
}

func TestNowAndIDsAreTheSameOnEveryReplay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := sqldbtest.SQLite(t)
	clock := clockwork.NewFakeClockAt(t0)
	var seen []string
	w := newWorld(t, db.DB, clock, func(e *Engine) {
		require.NoError(t, Register(e, "ids", func(ctx Context, _ int) (string, error) {
			id, now := ctx.NewID(), ctx.Now()
			seen = append(seen, id+"@"+now.Format(time.RFC3339Nano))
			if err := ctx.Sleep(time.Hour); err != nil {
				return "", err
			}
			return id, nil
		}))
	})
	_, err := Start(ctx, w.e, "ids", "x", 0)
	require.NoError(t, err)
	w.tick()
	clock.Advance(2 * time.Hour)
	w.tick()
	require.Len(t, seen, 2)
	require.Equal(t, seen[0], seen[1], "the replay got the recorded id and time")
	out, _, err := Result[string](ctx, w.e, "x")
	require.NoError(t, err)
	require.Contains(t, seen[0], out)
}

// TestStartRefusesIDsTheDashboardCannotLinkTo: an instance id is refused
// where it is created when no URL path can carry it ("." and "..") or a
// database cannot store it, with the reason; nothing is started.
func TestStartRefusesIDsTheDashboardCannotLinkTo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := sqldbtest.SQLite(t)
	fx := &effects{}
	w := newWorld(t, db.DB, clockwork.NewFakeClockAt(t0), func(e *Engine) {
		require.NoError(t, Register(e, "order", orderWorkflow(fx)))
	})
	for id, want := range map[string]string{
		".":       `instance id: ".": "." and ".." cannot be carried in a URL path`,
		"..":      `instance id: "..": "." and ".."`,
		"nul\x00": `instance id: "nul\x00" contains control character U+0000`,
		"\xffbad": `instance id: "\xffbad" is not valid UTF-8`,
	} {
		_, err := Start(ctx, w.e, "order", id, orderIn{id, 1})
		require.ErrorIs(t, err, ErrInvalidArgument, "%q", id)
		require.ErrorContains(t, err, want)
		_, err = w.e.Status(ctx, id)
		require.ErrorIs(t, err, ErrUnknownInstance, "%q was not started", id)
	}
	_, err := Start(ctx, w.e, "order", "...", orderIn{"...", 1})
	require.NoError(t, err, "three dots are a name like any other")
}
