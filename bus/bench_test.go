package bus_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/passage-of-time/passage/bus"
)

// benchEvent is a small concrete event, as a domain event usually is.
type benchEvent struct {
	ID     int64
	Amount int64
}

var benchSink int64

//go:noinline
func benchHandler(_ context.Context, e benchEvent) error {
	benchSink += e.Amount
	return nil
}

func handlers(n int) []func(context.Context, benchEvent) error {
	hs := make([]func(context.Context, benchEvent) error, n)
	for i := range hs {
		hs[i] = benchHandler
	}
	return hs
}

// floorLoop is the cheapest possible delivery, which the bus is compared
// with: a plain loop calling the handlers directly.
func floorLoop(ctx context.Context, hs []func(context.Context, benchEvent) error, ev benchEvent) error {
	for _, h := range hs {
		if err := h(ctx, ev); err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkPublishEvent compares synchronous delivery of one concrete event
// through the bus with the floor: PublishEvent (bus) and a Topic's Publish
// (topic), which keeps the route between publishes. The bus benchmark runs the floor too, in
// alternating chunks so that both see the same machine load, and reports
// its own ns/op, the floor's (floor-ns/op) and their ratio (x-floor).
// Targets: 0 allocs/op, at most 10x the floor for 1 handler and 5x for 4.
func BenchmarkPublishEvent(b *testing.B) {
	ctx := context.Background()
	ev := benchEvent{ID: 1, Amount: 2}
	for _, n := range []int{1, 4} {
		hs := handlers(n)
		b.Run("handlers="+strconv.Itoa(n)+"/floor", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := floorLoop(ctx, hs, ev); err != nil {
					b.Fatal(err)
				}
			}
		})
		subscribed := func(b *testing.B) *bus.Bus {
			bs, err := bus.New()
			if err != nil {
				b.Fatal(err)
			}
			for _, h := range hs {
				if _, err := bus.Subscribe(bs, h); err != nil {
					b.Fatal(err)
				}
			}
			return bs
		}
		b.Run("handlers="+strconv.Itoa(n)+"/bus", func(b *testing.B) {
			bs := subscribed(b)
			versusFloor(b, hs, ev, func() error { return bus.PublishEvent(ctx, bs, ev) })
		})
		b.Run("handlers="+strconv.Itoa(n)+"/topic", func(b *testing.B) {
			topic := bus.TopicOf[benchEvent](subscribed(b))
			versusFloor(b, hs, ev, func() error { return topic.Publish(ctx, ev) })
		})
	}
}

// versusFloor runs publish b.N times and the floor as many, in
// alternating chunks so that both see the same machine load, and reports
// publish's ns/op, the floor's (floor-ns/op) and their ratio (x-floor).
func versusFloor(b *testing.B, hs []func(context.Context, benchEvent) error, ev benchEvent, publish func() error) {
	ctx := context.Background()
	const chunk = 1024
	var busTime, floorTime time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += chunk {
		m := min(chunk, b.N-done)
		start := time.Now()
		for range m {
			if err := floorLoop(ctx, hs, ev); err != nil {
				b.Fatal(err)
			}
		}
		mid := time.Now()
		for range m {
			if err := publish(); err != nil {
				b.Fatal(err)
			}
		}
		floorTime += mid.Sub(start)
		busTime += time.Since(mid)
	}
	b.StopTimer()
	b.ReportMetric(float64(busTime.Nanoseconds())/float64(b.N), "ns/op")
	b.ReportMetric(float64(floorTime.Nanoseconds())/float64(b.N), "floor-ns/op")
	b.ReportMetric(float64(busTime)/float64(floorTime), "x-floor")
}

type keyedEvent struct {
	Key string
	K   int
	Seq int
}

// BenchmarkAsyncKeyed measures keyed asynchronous delivery end to end, from
// the first Publish to the last handler returning (Close drains): 4
// workers, 1,000 keys, one publisher. Target: 1,000,000 events/s.
func BenchmarkAsyncKeyed(b *testing.B) {
	const keys = 1000
	names := make([]string, keys)
	for i := range names {
		names[i] = "order-" + strconv.Itoa(i)
	}
	bs, err := bus.New()
	if err != nil {
		b.Fatal(err)
	}
	// Each key runs on one goroutine at a time, so its counter needs no
	// lock; the race detector checks that claim when run with -race.
	handled := make([]int, keys)
	_, err = bus.Subscribe(bs, func(_ context.Context, e keyedEvent) error {
		handled[e.K]++
		return nil
	}, bus.Async(4, 16384), bus.KeyBy(func(e keyedEvent) string { return e.Key }))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		k := i % keys
		if err := bus.PublishEvent(ctx, bs, keyedEvent{Key: names[k], K: k, Seq: i}); err != nil {
			b.Fatal(err)
		}
	}
	if err := bs.Close(ctx); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	total := 0
	for _, n := range handled {
		total += n
	}
	if total != b.N {
		b.Fatalf("handled %d of %d events", total, b.N)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
}
