package orchestration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/todolist"
)

// BenchmarkWorkflow runs "start → step → sleep one minute (fake clock) →
// step → complete" for 1,000 instances per op and reports workflows and
// timer wake-ups per second, on each backend.
//
//	go test ./orchestration -run '^$' -bench BenchmarkWorkflow -benchtime 3x
func BenchmarkWorkflow(b *testing.B) {
	const n = 1000
	for _, be := range sqldbtest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			ctx := context.Background()
			var started, woken time.Duration
			for i := range b.N {
				b.StopTimer()
				db, _ := be.Open(b)
				clock := clockwork.NewFakeClockAt(t0)
				e, err := New(ctx, db.DB, WithClock(clock))
				if err != nil {
					b.Fatal(err)
				}
				if err := Register(e, "bench", func(ctx Context, x int) (int, error) {
					a, err := Step(ctx, "a", func(context.Context, StepInfo) (int, error) { return x, nil })
					if err != nil {
						return 0, err
					}
					if err := ctx.Sleep(time.Minute); err != nil {
						return 0, err
					}
					return Step(ctx, "b", func(context.Context, StepInfo) (int, error) { return a + 1, nil })
				}); err != nil {
					b.Fatal(err)
				}
				p, err := e.Processor(todolist.WithBatchSize(1000))
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				begin := time.Now()
				for j := range n {
					if _, err := Start(ctx, e, "bench", fmt.Sprint(i, "-", j), j); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := p.Process(ctx, clock.Now()); err != nil { // first step, then sleep
					b.Fatal(err)
				}
				started += time.Since(begin)
				clock.Advance(time.Minute)
				begin = time.Now()
				res, err := p.Process(ctx, clock.Now()) // the timers: second step, complete
				if err != nil {
					b.Fatal(err)
				}
				woken += time.Since(begin)
				if res.Claimed != n {
					b.Fatalf("woke %d of %d", res.Claimed, n)
				}
			}
			total := started + woken
			b.ReportMetric(float64(n*b.N)/total.Seconds(), "workflows/s")
			b.ReportMetric(float64(n*b.N)/woken.Seconds(), "wakeups/s")
		})
	}
}
