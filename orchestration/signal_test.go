package orchestration

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/eventstore"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// history returns the types of an instance's events, in order, as their
// stored names.
func historyOf(t *testing.T, w *world, instance string) []eventstore.Recorded {
	t.Helper()
	h, err := w.e.store.Load(context.Background(), streamOf(instance), 0)
	require.NoError(t, err)
	return h
}

// completions counts the StepCompleted events of name in history.
func completions(history []eventstore.Recorded, name string) int {
	n := 0
	for _, r := range history {
		if c, ok := r.Event.(stepCompleted); ok && c.Name == name {
			n++
		}
	}
	return n
}

// A signal recorded while a step runs does not make the step run again:
// what the step returned is recorded after the signal, in the same
// wake-up, whichever way the execution goes on — into another step (its
// result is written before that step's side effect), into a sleep or to
// its end (written with the wake-up's batch).
func TestASignalDuringAStepDoesNotRunItAgain(t *testing.T) {
	t.Parallel()
	shapes := map[string]func(ctx Context, a int, fx *effects) (int, error){
		"then a step": func(ctx Context, a int, fx *effects) (int, error) {
			return Step(ctx, "b", func(context.Context, StepInfo) (int, error) { fx.do("b"); return a + 1, nil })
		},
		"then a sleep": func(ctx Context, a int, fx *effects) (int, error) {
			if err := ctx.Sleep(time.Hour); err != nil {
				return 0, err
			}
			return Step(ctx, "b", func(context.Context, StepInfo) (int, error) { fx.do("b"); return a + 1, nil })
		},
		"then the end": func(ctx Context, a int, fx *effects) (int, error) {
			fx.do("b")
			return a + 1, nil
		},
	}
	for _, b := range sqldbtest.Backends() {
		for shape, rest := range shapes {
			t.Run(b.Name+"/"+shape, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				db, _ := b.Open(t)
				clock := clockwork.NewFakeClockAt(t0)
				fx := &effects{}
				running, release := make(chan struct{}, 1), make(chan struct{})
				w := newWorld(t, db.DB, clock, func(e *Engine) {
					require.NoError(t, Register(e, "slow", func(ctx Context, _ int) (int, error) {
						a, err := Step(ctx, "a", func(context.Context, StepInfo) (int, error) {
							fx.do("a")
							running <- struct{}{}
							<-release
							return 1, nil
						})
						if err != nil {
							return 0, err
						}
						return rest(ctx, a, fx)
					}))
				})
				_, err := Start(ctx, w.e, "slow", "i", 0)
				require.NoError(t, err)

				ticked := make(chan struct{})
				go func() {
					defer close(ticked)
					w.tick()
				}()
				<-running
				require.NoError(t, w.e.Signal(ctx, "i", "noise", 1))
				close(release) // the step returns only once the signal is stored
				<-ticked

				h := historyOf(t, w, "i")
				require.Equal(t, 1, completions(h, "a"), "the step's result is recorded in the wake-up it ran in")
				signalAt, stepAt := int64(0), int64(0)
				for _, r := range h {
					switch e := r.Event.(type) {
					case signalReceived:
						signalAt = r.Version
					case stepCompleted:
						if e.Name == "a" {
							stepAt = r.Version
						}
					}
				}
				require.Less(t, signalAt, stepAt, "recorded after the signal, at the stream's new version")

				w.runUntilQuiet(t0.Add(24 * time.Hour))
				out, st, err := Result[int](ctx, w.e, "i")
				require.NoError(t, err, "%s: %s", st.State, st.Error)
				require.Equal(t, 2, out)
				require.Equal(t, 1, fx.count("a"), "the step ran once")
				require.Equal(t, 1, fx.count("b"))
			})
		}
	}
}

// A signal that lands while an instance sleeps after its step, with the
// step's result and the sleep written after it, wakes the instance at
// once: the Await it reaches next sees the signal without waiting out
// the sleep's hour.
func TestASignalOvertakenByAStepIsSeenAtOnce(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			clock := clockwork.NewFakeClockAt(t0)
			running, release := make(chan struct{}, 1), make(chan struct{})
			w := newWorld(t, db.DB, clock, func(e *Engine) {
				require.NoError(t, Register(e, "wait", func(ctx Context, _ int) (string, error) {
					if _, err := Step(ctx, "a", func(context.Context, StepInfo) (int, error) {
						running <- struct{}{}
						<-release
						return 1, nil
					}); err != nil {
						return "", err
					}
					v, ok, err := Await[string](ctx, "shipped", time.Hour)
					if err != nil || !ok {
						return "timed out", err
					}
					return v, nil
				}))
			})
			_, err := Start(ctx, w.e, "wait", "i", 0)
			require.NoError(t, err)
			ticked := make(chan struct{})
			go func() {
				defer close(ticked)
				w.tick()
			}()
			<-running
			require.NoError(t, w.e.Signal(ctx, "i", "shipped", "1Z"))
			close(release)
			<-ticked
			w.tick() // the same instant: no time has passed
			out, st, err := Result[string](ctx, w.e, "i")
			require.NoError(t, err, "%s: %s", st.State, st.Error)
			require.Equal(t, "1Z", out)
		})
	}
}

// While signals arrive every millisecond against steps of about two, each
// step still runs once: its result never waits for a quiet moment.
func TestEachStepRunsOnceInASignalStorm(t *testing.T) {
	t.Parallel()
	const steps = 10
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			clock := clockwork.NewFakeClockAt(t0)
			fx := &effects{}
			w := newWorld(t, db.DB, clock, func(e *Engine) {
				require.NoError(t, Register(e, "steps", func(ctx Context, _ int) (int, error) {
					for i := range steps {
						if _, err := Step(ctx, fmt.Sprint("s", i), func(_ context.Context, info StepInfo) (int, error) {
							fx.do(info.Name)
							time.Sleep(2 * time.Millisecond) // the side effect's own duration
							return i, nil
						}); err != nil {
							return 0, err
						}
					}
					return steps, nil
				}))
			})
			_, err := Start(ctx, w.e, "steps", "i", 0)
			require.NoError(t, err)

			stop := make(chan struct{})
			var storm sync.WaitGroup
			var sent int
			var stormErr error
			storm.Add(1)
			go func() {
				defer storm.Done()
				// A millisecond between one signal's commit and the next:
				// back to back (a ticker falling behind a loaded machine),
				// SQLite's one write lock is never free long enough for
				// the processor's busy wait to take it, and the claim
				// fails with "database is locked" after its 10 s.
				for {
					select {
					case <-stop:
						return
					case <-time.After(time.Millisecond):
					}
					err := w.e.Signal(ctx, "i", "noise", sent)
					if errors.Is(err, ErrFinished) {
						return
					}
					if err != nil {
						stormErr = err
						return
					}
					sent++
				}
			}()
			for range 30 {
				if st, err := w.e.Status(ctx, "i"); err == nil && st.State != Running {
					break
				}
				w.tick()
				clock.Advance(time.Minute)
			}
			close(stop)
			storm.Wait()
			require.NoError(t, stormErr)

			_, st, err := Result[int](ctx, w.e, "i")
			require.NoError(t, err, "%s: %s", st.State, st.Error)
			for i := range steps {
				require.Equal(t, 1, fx.count(fmt.Sprint("s", i)), "step s%d (%d signals sent)", i, sent)
			}
			t.Logf("%d signals while %d steps ran", sent, steps)
		})
	}
}

// An append that another execution decided (here, a step's result as a
// second processor would record it) is a real contradiction: the write
// that did not load it loses, and the instance is replayed against it.
func TestAnotherExecutionsDecisionsStillWin(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			clock := clockwork.NewFakeClockAt(t0)
			fx := &effects{}
			w := newWorld(t, db.DB, clock, func(e *Engine) {
				require.NoError(t, Register(e, "one", func(ctx Context, _ int) (int, error) {
					return Step(ctx, "a", func(context.Context, StepInfo) (int, error) { fx.do("a"); return 1, nil })
				}))
			})
			_, err := Start(ctx, w.e, "one", "i", 0)
			require.NoError(t, err)
			raced := false
			w.e.fault = func([]any) error {
				if !raced {
					raced = true
					_, err := w.e.store.Append(ctx, streamOf("i"), eventstore.StreamExists,
						signalReceived{Name: "noise"}, stepCompleted{Name: "a", Result: []byte("7"), Attempts: 1})
					require.NoError(t, err)
				}
				return nil
			}
			w.tick()
			require.True(t, raced)
			w.e.fault = nil
			require.Equal(t, 1, completions(historyOf(t, w, "i"), "a"), "the other execution's result only")
			clock.Advance(time.Minute)
			w.tick()
			out, st, err := Result[int](ctx, w.e, "i")
			require.NoError(t, err, "%s: %s", st.State, st.Error)
			require.Equal(t, 7, out, "the replay takes the recorded result")
		})
	}
}

// Signal and Cancel refuse an instance that has ended, in every way it
// can end, with ErrFinished; they refuse an id never started with
// ErrUnknownInstance, and reach a running instance.
func TestSignalAndCancelRefuseAFinishedInstance(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			clock := clockwork.NewFakeClockAt(t0)
			stuck := false
			w := newWorld(t, db.DB, clock, func(e *Engine) {
				require.NoError(t, Register(e, "ends", func(ctx Context, how string) (int, error) {
					switch how {
					case "fail":
						return 0, errors.New("no stock")
					case "stick":
						name := "a"
						if stuck { // the code changed under the instance
							name = "renamed"
						}
						if _, err := Step(ctx, name, func(context.Context, StepInfo) (int, error) { return 1, nil }); err != nil {
							return 0, err
						}
					case "linger":
						return 1, ctx.Sleep(24 * time.Hour)
					}
					return 1, ctx.Sleep(time.Hour)
				}))
			})
			for id, how := range map[string]string{"completed": "sleep", "failed": "fail", "cancelled": "linger", "stuck": "stick", "running": "linger"} {
				_, err := Start(ctx, w.e, "ends", id, how)
				require.NoError(t, err)
			}
			w.tick() // "failed" fails, the others sleep
			require.NoError(t, w.e.Cancel(ctx, "cancelled"))
			stuck = true
			require.NoError(t, w.e.Signal(ctx, "stuck", "poke", nil)) // wakes it against the renamed step
			require.NoError(t, w.e.Signal(ctx, "running", "poke", nil))
			w.tick()
			clock.Advance(time.Hour)
			w.tick() // "completed" wakes and completes
			st, err := w.e.Status(ctx, "running")
			require.NoError(t, err)
			require.Equal(t, Running, st.State)
			for id, want := range map[string]State{"completed": Completed, "failed": Failed, "cancelled": Cancelled, "stuck": Stuck} {
				st, err := w.e.Status(ctx, id)
				require.NoError(t, err)
				require.Equal(t, want, st.State, id)
				before := st.Events
				err = w.e.Signal(ctx, id, "late", nil)
				require.ErrorIs(t, err, ErrFinished, id)
				require.ErrorContains(t, err, string(want), "the error names the state")
				require.ErrorIs(t, w.e.Cancel(ctx, id), ErrFinished, id)
				st, err = w.e.Status(ctx, id)
				require.NoError(t, err)
				require.Equal(t, before, st.Events, "%s: nothing appended", id)
			}
			require.ErrorIs(t, w.e.Signal(ctx, "never", "late", nil), ErrUnknownInstance)
			require.ErrorIs(t, w.e.Cancel(ctx, "never"), ErrUnknownInstance)
		})
	}
}
