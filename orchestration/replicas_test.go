package orchestration

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// Two replicas on one database work the same instances, ticking at once:
// every instance completes, and no step runs twice.
func TestTwoReplicasWorkTheSameInstances(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db, dsn := b.Open(t)
			other, err := sqldb.Open(context.Background(), dsn)
			require.NoError(t, err)
			t.Cleanup(func() { _ = other.Close() })
			clock := clockwork.NewFakeClockAt(t0)
			fx := &effects{}
			reg := func(e *Engine) { require.NoError(t, Register(e, "steps", steps(fx, 3))) }
			a, c := newWorld(t, db.DB, clock, reg), newWorld(t, other.DB, clock, reg)
			const n = 20
			for i := range n {
				_, err := Start(context.Background(), a.e, "steps", fmt.Sprint("i-", i), 0)
				require.NoError(t, err)
			}
			for range 10 {
				var wg sync.WaitGroup
				for _, w := range []*world{a, c} {
					wg.Add(1)
					go func() {
						defer wg.Done()
						_, _ = w.p.Process(context.Background(), clock.Now()) // a lost race is a conflict, retried
					}()
				}
				wg.Wait()
				clock.Advance(time.Minute)
			}
			for i := range n {
				out, st, err := Result[int](context.Background(), a.e, fmt.Sprint("i-", i))
				require.NoError(t, err, "%+v", st)
				require.Equal(t, 3, out)
			}
			for s := range 3 {
				require.Equal(t, n, fx.count(fmt.Sprint("step-", s)), "step %d ran once per instance", s)
			}
		})
	}
}

// TestAKilledProcessResumesElsewhere kills (SIGKILL) a process in the
// middle of an instance's second step, after its first was recorded: the
// survivor runs the second step again (its result was never recorded) and
// never the first.
func TestAKilledProcessResumesElsewhere(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db, dsn := b.Open(t)
			log := t.TempDir() + "/effects"
			clock := clockwork.NewFakeClockAt(t0)
			survivor := newWorld(t, db.DB, clock, func(e *Engine) { require.NoError(t, Register(e, "two", twoSteps(log, false))) })
			_, err := Start(context.Background(), survivor.e, "two", "k", 0)
			require.NoError(t, err)

			child := exec.Command(os.Args[0], "-test.run=^TestKilledWorkflowProcess$")
			child.Env = append(os.Environ(), "WORKFLOW_KILL_DSN="+dsn, "WORKFLOW_KILL_LOG="+log)
			out, err := child.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, child.Start())
			lines := bufio.NewScanner(out)
			for lines.Scan() && lines.Text() != "in second" {
			}
			require.NoError(t, child.Process.Kill())
			_ = child.Wait()

			clock.Advance(time.Hour) // past the dead process's lease
			survivor.tick()
			got, _, err := Result[string](context.Background(), survivor.e, "k")
			require.NoError(t, err)
			require.Equal(t, "first+second", got)
			b, err := os.ReadFile(log)
			require.NoError(t, err)
			require.Equal(t, "first\nsecond\nsecond\n", string(b), "the first step once, the second again")
		})
	}
}

// twoSteps logs each side effect to a file; in the child, the second step
// blocks until the process is killed.
func twoSteps(log string, block bool) func(Context, int) (string, error) {
	effect := func(name string) {
		f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			_, _ = f.WriteString(name + "\n")
			_ = f.Close()
		}
	}
	return func(ctx Context, _ int) (string, error) {
		a, err := Step(ctx, "first", func(context.Context, StepInfo) (string, error) { effect("first"); return "first", nil })
		if err != nil {
			return "", err
		}
		b, err := Step(ctx, "second", func(context.Context, StepInfo) (string, error) {
			effect("second")
			if block {
				fmt.Println("in second")
				select {} // until SIGKILL
			}
			return "second", nil
		})
		if err != nil {
			return "", err
		}
		return strings.Join([]string{a, b}, "+"), nil
	}
}

// TestKilledWorkflowProcess is the process the test above kills.
func TestKilledWorkflowProcess(t *testing.T) {
	dsn := os.Getenv("WORKFLOW_KILL_DSN")
	if dsn == "" {
		t.Skip("the child of TestAKilledProcessResumesElsewhere")
	}
	db, err := sqldb.Open(context.Background(), dsn)
	require.NoError(t, err)
	clock := clockwork.NewFakeClockAt(t0.Add(time.Second))
	w := newWorld(t, db.DB, clock, func(e *Engine) {
		require.NoError(t, Register(e, "two", twoSteps(os.Getenv("WORKFLOW_KILL_LOG"), true)))
	})
	w.tick()
	t.Fatal("the second step returned")
}
