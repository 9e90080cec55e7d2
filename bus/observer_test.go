package bus_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/bus"
)

// countingObserver is what a metrics library would plug in.
type countingObserver struct {
	events  recorder
	results chan bus.HandlerResult
}

func (o *countingObserver) Published(_ context.Context, eventType string) {
	o.events.add("published " + eventType)
}

func (o *countingObserver) Handled(_ context.Context, r bus.HandlerResult) {
	o.results <- r
}

func TestObserverCountsPublishedHandledFailedAndLatency(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClock()
	obs := &countingObserver{results: make(chan bus.HandlerResult, 10)}
	b := setup(t, bus.WithClock(clock), bus.WithObserver(obs))
	subscribe(t, b, func(context.Context, orderPlaced) error {
		clock.Advance(3 * time.Millisecond)
		return nil
	}, bus.Name("sync-ok"))
	subscribe(t, b, func(context.Context, orderPlaced) error { return errors.New("refused") }, bus.Name("sync-fail"))
	subscribe(t, b, func(context.Context, orderPlaced) error {
		clock.Advance(7 * time.Millisecond)
		return nil
	}, bus.Name("async"), bus.Async(1, 1))

	require.Error(t, bus.PublishEvent(t.Context(), b, orderPlaced{}))
	require.NoError(t, b.Close(t.Context()))
	close(obs.results)

	require.Equal(t, []string{"published bus_test.orderPlaced"}, obs.events.all())
	var got []string
	for r := range obs.results {
		got = append(got, fmt.Sprintf("%s %s async=%t %s err=%v", r.Handler, r.EventType, r.Async, r.Latency, r.Err))
	}
	require.ElementsMatch(t, []string{
		"sync-ok bus_test.orderPlaced async=false 3ms err=<nil>",
		`sync-fail bus_test.orderPlaced async=false 0s err=bus: handler "sync-fail" on bus_test.orderPlaced: refused`,
		"async bus_test.orderPlaced async=true 7ms err=<nil>",
	}, got)
}

// panickingObserver is an observer with a bug.
type panickingObserver struct{}

func (panickingObserver) Published(context.Context, string)          { panic("metrics bug") }
func (panickingObserver) Handled(context.Context, bus.HandlerResult) { panic("metrics bug") }

func TestPanickingObserverAndDeadLetterAreLoggedAndHideNothing(t *testing.T) {
	t.Parallel()
	var buf syncBuffer
	b := setup(t, bus.WithObserver(panickingObserver{}),
		bus.WithLogger(slog.New(slog.NewTextHandler(&buf, nil))),
		bus.WithDeadLetter(func(context.Context, *bus.HandlerError) { panic("dead-letter bug") }))
	var r recorder
	subscribe(t, b, record[orderPlaced](&r, "ok", nil), bus.Name("ok"))
	subscribe(t, b, record[orderPlaced](&r, "fail", errors.New("refused")), bus.Name("fail"))
	subscribe(t, b, record[orderPlaced](&r, "async", nil), bus.Name("async"), bus.Async(1, 1))

	err := b.Publish(t.Context(), orderPlaced{ID: "o", Seq: 1})
	require.EqualError(t, err, `bus: handler "fail" on bus_test.orderPlaced: refused`,
		"the observer's panic is not blamed on a handler, nor hides the real failure")
	require.NoError(t, b.Close(t.Context()), "the worker survived the observer too")
	require.ElementsMatch(t, []string{"ok:o/1", "fail:o/1", "async:o/1"}, r.all())

	out := buf.String()
	for _, want := range []string{
		`msg="bus: observer panicked" error="panic: metrics bug" stack=`,
		`msg="bus: dead-letter callback panicked" error="panic: dead-letter bug" stack=`,
	} {
		require.Contains(t, out, want)
	}
	for _, handler := range []string{"ok", "fail", "async"} {
		require.Regexp(t, `msg="bus: observer panicked" .* handler=`+handler+` event=bus_test.orderPlaced`, out)
	}
}
