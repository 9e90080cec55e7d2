package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	evbus "github.com/asaskevich/EventBus"

	"github.com/passage-of-time/passage/bus"
)

// orderPlaced is the event of the bus scenario: small and concrete, as a
// domain event usually is.
type orderPlaced struct {
	ID     int64
	Amount int64
}

var sink atomic.Int64

//go:noinline
func handle(e orderPlaced) { sink.Add(e.Amount) }

// busScenario: one subscriber, n events published one after another, the
// time from the first Publish until the handler has seen the last event.
// Synchronous rows return from Publish once the handler ran; asynchronous
// rows only enqueue, and a separate count of events is used for them because
// two of the peers start a goroutine per event.
func busScenario(ctx context.Context, cfg config, t *table) error {
	const syncScenario, asyncScenario = "bus, synchronous: publish → handled", "bus, asynchronous: publish → handled"
	n, na := cfg.events, cfg.async
	unit := "events/s"

	floor := t.add(&row{scenario: syncScenario, impl: "floor: a function call through a `func` value", n: n, unit: unit, nsPer: true})
	floor.floor = floor
	call := handle

	b, err := bus.New()
	if err != nil {
		return err
	}
	if _, err := bus.Subscribe(b, func(_ context.Context, e orderPlaced) error { handle(e); return nil }); err != nil {
		return err
	}
	pe := t.add(&row{scenario: syncScenario, impl: "passage bus, `PublishEvent[E]`", n: n, unit: unit, nsPer: true, floor: floor})
	pe.passage = pe
	pp := t.add(&row{scenario: syncScenario, impl: "passage bus, `Publish` (boxes the event)", n: n, unit: unit, nsPer: true, passage: pe, floor: floor})
	eb := evbus.New()
	if err := eb.Subscribe("order", func(e orderPlaced) { handle(e) }); err != nil {
		return err
	}
	er := t.add(&row{scenario: syncScenario, impl: "asaskevich/EventBus, `Publish` (reflection)", n: n, unit: unit, nsPer: true, passage: pe, floor: floor})
	interleave(n, []*row{floor, pe, pp, er}, []func(i int){
		func(i int) { call(orderPlaced{ID: int64(i), Amount: 1}) },
		func(i int) { _ = bus.PublishEvent(ctx, b, orderPlaced{ID: int64(i), Amount: 1}) },
		func(i int) { _ = b.Publish(ctx, orderPlaced{ID: int64(i), Amount: 1}) },
		func(i int) { eb.Publish("order", orderPlaced{ID: int64(i), Amount: 1}) },
	})

	wr := t.add(&row{scenario: syncScenario, impl: "Watermill GoChannel, `BlockPublishUntilSubscriberAck`", n: n, unit: unit, nsPer: true, passage: pe, floor: floor})
	if err := watermillRun(ctx, n, true, wr); err != nil {
		return err
	}

	// Asynchronous.
	af := t.add(&row{scenario: asyncScenario, impl: "floor: a buffered channel (1,024) and one goroutine", n: na, unit: unit, nsPer: true})
	af.floor = af
	{
		hp := startHeapPeak()
		ch := make(chan orderPlaced, 1024)
		done := make(chan struct{})
		go func() {
			for e := range ch {
				handle(e)
			}
			close(done)
		}()
		begin := time.Now()
		for i := range na {
			ch <- orderPlaced{ID: int64(i), Amount: 1}
		}
		close(ch)
		<-done
		af.perSec = float64(na) / time.Since(begin).Seconds()
		af.heap = hp.Stop()
	}

	pa := t.add(&row{scenario: asyncScenario, impl: "passage bus, `Async(1, 1024)` (in order, never drops)", n: na, unit: unit, nsPer: true, floor: af})
	pa.passage = pa
	{
		ab, err := bus.New()
		if err != nil {
			return err
		}
		var seen atomic.Int64
		all := make(chan struct{})
		if _, err := bus.Subscribe(ab, func(_ context.Context, e orderPlaced) error {
			handle(e)
			if seen.Add(1) == int64(na) {
				close(all)
			}
			return nil
		}, bus.Async(1, 1024)); err != nil {
			return err
		}
		hp := startHeapPeak()
		begin := time.Now()
		for i := range na {
			if err := bus.PublishEvent(ctx, ab, orderPlaced{ID: int64(i), Amount: 1}); err != nil {
				return err
			}
		}
		if err := wait(ctx, all, time.Minute); err != nil {
			return err
		}
		pa.perSec = float64(na) / time.Since(begin).Seconds()
		pa.heap = hp.Stop()
		if err := ab.Close(ctx); err != nil {
			return err
		}
	}

	wa := t.add(&row{scenario: asyncScenario, impl: "Watermill GoChannel, default config (two goroutines per message)", n: na, unit: unit, nsPer: true, passage: pa, floor: af})
	if err := watermillRun(ctx, na, false, wa); err != nil {
		return err
	}

	ea := t.add(&row{scenario: asyncScenario, impl: "asaskevich/EventBus, `SubscribeAsync` (a goroutine per event)", n: na, unit: unit, nsPer: true, passage: pa, floor: af})
	{
		eab := evbus.New()
		if err := eab.SubscribeAsync("order", func(e orderPlaced) { handle(e) }, false); err != nil {
			return err
		}
		hp := startHeapPeak()
		begin := time.Now()
		for i := range na {
			eab.Publish("order", orderPlaced{ID: int64(i), Amount: 1})
		}
		eab.WaitAsync()
		ea.perSec = float64(na) / time.Since(begin).Seconds()
		ea.heap = hp.Stop()
		ea.note = "not in order"
	}
	floor.note = "the handler adds the event's amount to an atomic counter, in every row; the synchronous rows above Watermill run in turn, five rounds, median"
	wr.note = "payload: the event's two fields as 16 bytes, message id `strconv.Itoa`: the cheapest encoding; Publish returns once the handler acked"
	wa.note = "same payload; `Publish` returns before delivery, delivery order not kept (the subscriber goroutine acks each message)"
	return nil
}

// interleave runs the synchronous contenders in turn, n/rounds calls each
// per round, so that all see the same machine, and gives each row the median
// of its rounds' rates.
func interleave(n int, rows []*row, fs []func(i int)) {
	const rounds = 5
	runtime.GC()
	rates := make([][]float64, len(rows))
	per := max(n/rounds, 1)
	for r := range rounds {
		for k, f := range fs {
			begin := time.Now()
			for i := r * per; i < (r+1)*per; i++ {
				f(i)
			}
			rates[k] = append(rates[k], float64(per)/time.Since(begin).Seconds())
		}
	}
	for k, r := range rows {
		slices.Sort(rates[k])
		r.perSec = rates[k][rounds/2]
	}
}

// watermillRun publishes n messages on a GoChannel with one subscriber that
// decodes, handles and acks each, until the last is handled.
func watermillRun(ctx context.Context, n int, block bool, r *row) error {
	gc := gochannel.NewGoChannel(gochannel.Config{BlockPublishUntilSubscriberAck: block}, nil)
	defer func() { _ = gc.Close() }()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	msgs, err := gc.Subscribe(sctx, "order")
	if err != nil {
		return err
	}
	all := make(chan struct{})
	go func() {
		seen := 0
		for m := range msgs {
			handle(orderPlaced{ID: int64(binary.LittleEndian.Uint64(m.Payload)), Amount: int64(binary.LittleEndian.Uint64(m.Payload[8:]))})
			m.Ack()
			if seen++; seen == n {
				close(all)
			}
		}
	}()
	hp := startHeapPeak()
	begin := time.Now()
	for i := range n {
		payload := make([]byte, 16)
		binary.LittleEndian.PutUint64(payload, uint64(i))
		binary.LittleEndian.PutUint64(payload[8:], 1)
		if err := gc.Publish("order", message.NewMessage(strconv.Itoa(i), payload)); err != nil {
			return fmt.Errorf("publish: %w", err)
		}
	}
	if err := wait(ctx, all, 5*time.Minute); err != nil {
		return err
	}
	r.perSec = float64(n) / time.Since(begin).Seconds()
	r.heap = hp.Stop()
	return nil
}
