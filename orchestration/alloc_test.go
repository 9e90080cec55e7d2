package orchestration

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// replaying builds an execution whose history records n answers of each
// kind, as a wake-up loads it.
func replaying(decisions []any) *execution {
	return &execution{engine: &Engine{}, ctx: context.Background(), instance: "i", decisions: decisions, consumed: map[int64]bool{}}
}

func BenchmarkReplayNow(b *testing.B) {
	x := replaying([]any{nowRecorded{At: t0}})
	b.ReportAllocs()
	for b.Loop() {
		x.next = 0
		if !x.Now().Equal(t0) {
			b.Fatal("wrong time")
		}
	}
}

func BenchmarkReplayStep(b *testing.B) {
	x := replaying([]any{stepCompleted{Name: "charge", Result: json.RawMessage(`42`), Attempts: 1}})
	fn := func(context.Context, StepInfo) (int, error) { panic("a recorded step must not run") }
	b.ReportAllocs()
	for b.Loop() {
		x.next = 0
		if v, err := Step(x, "charge", fn); err != nil || v != 42 {
			b.Fatal(v, err)
		}
	}
}

func BenchmarkReplaySleepDue(b *testing.B) {
	x := replaying([]any{timerScheduled{Seq: 0, Until: t0}, timerFired{Seq: 0}})
	b.ReportAllocs()
	for b.Loop() {
		x.next, x.seq = 0, 0
		if err := x.Sleep(time.Minute); err != nil {
			b.Fatal(err)
		}
	}
}

func TestReplayingRecordedAnswersAllocatesAlmostNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	now := replaying([]any{nowRecorded{At: t0}})
	step := replaying([]any{stepCompleted{Name: "charge", Result: json.RawMessage(`42`), Attempts: 1}})
	sleep := replaying([]any{timerScheduled{Seq: 0, Until: t0}, timerFired{Seq: 0}})
	never := func(context.Context, StepInfo) (int, error) { panic("a recorded step must not run") }
	for _, c := range []struct {
		name string
		max  float64
		f    func()
	}{
		{"Now", 0, func() { now.next = 0; now.Now() }},
		{"Sleep", 0, func() { sleep.next, sleep.seq = 0, 0; _ = sleep.Sleep(time.Minute) }},
		{"Step", 1, func() { step.next = 0; _, _ = Step(step, "charge", never) }}, // encoding/json's decode state
	} {
		if got := testing.AllocsPerRun(1000, c.f); got > c.max {
			t.Errorf("replaying a recorded %s allocates %v times, want at most %v", c.name, got, c.max)
		}
	}
}

// A replay catching up on delays that are over goes on without asking the
// store: a hundred sleeps until instants that all passed cost one append.
// (A Sleep(d) that runs live waits d from then: only delays with a fixed
// end, or recorded ones, can be over when reached.)
func TestSleepsThatAreOverCostNoRoundTrip(t *testing.T) {
	t.Parallel()
	db, _ := sqldbtest.SQLite(t)
	clock := clockwork.NewFakeClockAt(t0)
	w := newWorld(t, db.DB, clock, func(e *Engine) {
		require.NoError(t, Register(e, "naps", func(ctx Context, n int) (int, error) {
			start := ctx.Now()
			for i := range n {
				if err := ctx.SleepUntil(start.Add(time.Duration(i+1) * time.Minute)); err != nil {
					return 0, err
				}
			}
			return n, nil
		}))
	})
	_, err := Start(context.Background(), w.e, "naps", "i", 100)
	require.NoError(t, err)
	appends := 0
	w.e.fault = func([]any) error { appends++; return nil }
	w.tick() // the first sleep suspends
	require.Equal(t, 1, appends)
	clock.Advance(3 * time.Hour) // every sleep is over
	w.tick()
	require.Equal(t, 2, appends, "the 99 sleeps left and the result in one append")
	out, _, err := Result[int](context.Background(), w.e, "i")
	require.NoError(t, err)
	require.Equal(t, 100, out)
}
