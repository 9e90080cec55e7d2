package workflow_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/demo/ordering"
	"github.com/passage-of-time/passage/demo/workflow"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/todolist"
)

// BenchmarkTimeouts places n orders, runs them to their Await in one tick
// (each reserves its stock), lets 15 minutes pass and times the tick that
// times every one out: a replay, the timeout recorded, the release run and
// recorded, the instance closed, its to-do item removed. It reports those
// per second, next to the placing and the first run.
func BenchmarkTimeouts(b *testing.B) {
	for _, backend := range sqldbtest.Backends() {
		for _, n := range []int{1_000} {
			b.Run(fmt.Sprintf("%s/orders=%d", backend.Name, n), func(b *testing.B) {
				ctx := context.Background()
				var placing, starting, timing time.Duration
				for range b.N {
					b.StopTimer()
					e := setup(b, backend)
					e.warehouse = workflow.NewWarehouse(map[string]int{"coffee": n})
					e.restart()
					var err error
					e.proc, err = e.engine.Processor(todolist.WithBatchSize(1000), todolist.WithMaxItems(n), todolist.WithTimeBudget(time.Hour))
					require.NoError(b, err)
					b.StartTimer()
					t0 := time.Now()
					for i := range n {
						_, err := workflow.Place(ctx, e.engine, workflow.Order{ID: fmt.Sprint("o-", i), Items: []ordering.PricedItem{{ProductID: "coffee", Quantity: 1}}, Amount: 1})
						require.NoError(b, err)
					}
					t1 := time.Now()
					e.tick()
					t2 := time.Now()
					e.clock.Advance(workflow.PaymentTimeout)
					e.tick()
					t3 := time.Now()
					placing, starting, timing = placing+t1.Sub(t0), starting+t2.Sub(t1), timing+t3.Sub(t2)
					b.StopTimer()
					require.Equal(b, n, e.warehouse.Available("coffee"), "every order released")
					for i := range n {
						require.True(b, workflow.NotPaid(e.status(fmt.Sprint("o-", i))))
					}
				}
				total := float64(n * b.N)
				b.ReportMetric(total/placing.Seconds(), "placed/s")
				b.ReportMetric(total/starting.Seconds(), "started/s")
				b.ReportMetric(total/timing.Seconds(), "timeouts/s")
			})
		}
	}
}
