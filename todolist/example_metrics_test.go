package todolist_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/jonboulle/clockwork"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/passage-of-time/passage/todolist"
)

// A list records its metrics with the meter provider it is given (the
// global one otherwise); here the SDK's, read back by hand as an
// exporter would at each scrape.
func ExampleWithMeterProvider() {
	ctx := context.Background()
	db, cleanup := openExampleDB()
	defer cleanup()

	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = provider.Shutdown(ctx) }()

	deadline := time.Date(2026, 3, 29, 10, 15, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(deadline.Add(40 * time.Second))
	pending, err := todolist.Open(ctx, db, "pending-orders", todolist.WithMeterProvider(provider), todolist.WithListClock(clock))
	if err != nil {
		log.Fatal(err)
	}
	_ = pending.Add(ctx, "order-1", deadline)
	_ = pending.Add(ctx, "order-2", deadline.Add(time.Hour))
	p, err := todolist.NewProcessor(pending, func(context.Context, todolist.Item) error { return nil })
	if err != nil {
		log.Fatal(err)
	}
	if _, err := p.Process(ctx, clock.Now()); err != nil {
		log.Fatal(err)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		log.Fatal(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch data := m.Data.(type) {
		case metricdata.Sum[int64]:
			fmt.Println(m.Name, data.DataPoints[0].Value)
		case metricdata.Gauge[int64]:
			fmt.Println(m.Name, data.DataPoints[0].Value)
		case metricdata.Histogram[float64]:
			fmt.Printf("%s count %d, sum %g %s\n", m.Name, data.DataPoints[0].Count, data.DataPoints[0].Sum, m.Unit)
		}
	}
	// Output:
	// passage.todolist.items.added 2
	// passage.todolist.items.completed 1
	// passage.todolist.action.lateness count 1, sum 40 s
	// passage.todolist.backlog 1
}
