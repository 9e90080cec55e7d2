package bus_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/bus"
)

// failAfter bounds how long a test waits for something that must happen; it
// only decides how long a broken bus takes to fail the test.
const failAfter = 10 * time.Second

func TestKeyedDeliveryKeepsPerKeyOrderAndNeverOverlapsAKey(t *testing.T) {
	t.Parallel()
	const (
		keys       = 200
		perKey     = 100
		publishers = 4
		workers    = 8
	)
	var violations recorder
	b := setup(t)
	// Each key's checker state is touched only by that key's handler calls,
	// without locks: the race detector fails the test if two workers ever
	// ran one key at once, and active catches it without -race.
	last := make([]int, keys)
	active := make([]atomic.Int32, keys)
	var handled atomic.Int64
	subscribe(t, b, func(_ context.Context, e orderPlaced) error {
		k := keyIndex(e.ID)
		if n := active[k].Add(1); n != 1 {
			violations.add(fmt.Sprintf("%s ran on %d goroutines at once", e.ID, n))
		}
		if e.Seq != last[k]+1 {
			violations.add(fmt.Sprintf("%s: got %d after %d", e.ID, e.Seq, last[k]))
		}
		last[k] = e.Seq
		active[k].Add(-1)
		handled.Add(1)
		return nil
	}, bus.Async(workers, 64), bus.KeyBy(func(e orderPlaced) string { return e.ID }))

	// Each publisher owns a slice of the keys, so each key's events are
	// published in order by one goroutine, interleaved with other keys.
	var wg sync.WaitGroup
	for p := range publishers {
		wg.Go(func() {
			for seq := 1; seq <= perKey; seq++ {
				for k := p; k < keys; k += publishers {
					if err := bus.PublishEvent(context.Background(), b, orderPlaced{ID: keyName(k), Seq: seq}); err != nil {
						violations.add(err.Error())
						return
					}
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, b.Close(t.Context()))
	require.Empty(t, violations.all())
	require.Equal(t, int64(keys*perKey), handled.Load())
	for k := range keys {
		require.Equal(t, perKey, last[k], "key %d", k)
	}
}

func keyName(k int) string { return fmt.Sprintf("order-%d", k) }

func keyIndex(id string) int {
	var k int
	_, _ = fmt.Sscanf(id, "order-%d", &k)
	return k
}

func TestDifferentKeysRunInParallel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	bRan := make(chan struct{})
	result := make(chan error, 1)
	subscribe(t, b, func(_ context.Context, e orderPlaced) error {
		if e.ID == "b" {
			close(bRan)
			return nil
		}
		// Key a waits for key b: with one key at a time this never ends.
		select {
		case <-bRan:
			result <- nil
		case <-time.After(failAfter):
			result <- errors.New("key b did not run while key a was running")
		}
		return nil
	}, bus.Async(2, 10), bus.KeyBy(func(e orderPlaced) string { return e.ID }))

	require.NoError(t, b.Publish(t.Context(), orderPlaced{ID: "a"}, orderPlaced{ID: "b"}))
	require.NoError(t, <-result)
}

func TestUnkeyedEventsRunInParallel(t *testing.T) {
	t.Parallel()
	const workers = 4
	b := setup(t)
	var started atomic.Int32
	allStarted := make(chan struct{})
	results := make(chan error, workers)
	subscribe(t, b, func(context.Context, orderPlaced) error {
		if started.Add(1) == workers {
			close(allStarted)
		}
		// Each event waits for all the others to start: run on fewer than
		// workers goroutines at once, the burst never gets there.
		select {
		case <-allStarted:
			results <- nil
		case <-time.After(failAfter):
			results <- fmt.Errorf("only %d of %d events started together", started.Load(), workers)
		}
		return nil
	}, bus.Async(workers, 100))

	// One Publish queues the burst faster than a worker wakes, which is
	// when one worker could take it all.
	events := make([]any, workers)
	for i := range events {
		events[i] = orderPlaced{ID: "o", Seq: i + 1}
	}
	require.NoError(t, b.Publish(t.Context(), events...))
	for range workers {
		require.NoError(t, <-results)
	}
}

// gated is an asynchronous handler that announces each event it starts and
// then waits for the gate to open (or its context to end).
type gated struct {
	started chan orderPlaced
	gate    chan struct{}
	handled recorder
}

func newGated() *gated {
	return &gated{started: make(chan orderPlaced, 100), gate: make(chan struct{})}
}

func (g *gated) handle(ctx context.Context, e orderPlaced) error {
	g.started <- e
	select {
	case <-g.gate:
		g.handled.add(fmtEvent(e))
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitSpy is a publisher's context that tells when Publish first asks for
// its Done channel, which it does only to wait on it: for room in a full
// queue.
type waitSpy struct {
	context.Context
	once    sync.Once
	waiting chan struct{}
}

func newWaitSpy(ctx context.Context) *waitSpy {
	return &waitSpy{Context: ctx, waiting: make(chan struct{})}
}

func (c *waitSpy) Done() <-chan struct{} {
	c.once.Do(func() { close(c.waiting) })
	return c.Context.Done()
}

func TestFullQueueMakesPublishWaitAndLosesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	g := newGated()
	subscribe(t, b, g.handle, bus.Async(1, 1))
	ctx := t.Context()

	require.NoError(t, b.Publish(ctx, orderPlaced{ID: "o", Seq: 1}))
	require.Equal(t, 1, (<-g.started).Seq, "the worker holds event 1")
	require.NoError(t, b.Publish(ctx, orderPlaced{ID: "o", Seq: 2}), "event 2 fills the queue")

	// The queue is full: a publisher whose context ends while waiting is
	// told so, and the event is not half-delivered.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	err := b.Publish(cancelled, orderPlaced{ID: "o", Seq: 99})
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "waiting for room in the queue (1 events)")

	// A publisher with time waits for room: it is still inside Publish
	// when the handler is released, and gets in only after.
	spy := newWaitSpy(ctx)
	published := make(chan error, 1)
	go func() { published <- b.Publish(spy, orderPlaced{ID: "o", Seq: 3}) }()
	select {
	case <-spy.waiting:
	case err := <-published:
		t.Fatalf("Publish into a full queue returned without waiting: %v", err)
	case <-time.After(failAfter):
		t.Fatal("Publish into a full queue never waited on its context")
	}
	select {
	case err := <-published:
		t.Fatalf("Publish returned while the queue was still full: %v", err)
	default:
	}
	close(g.gate)
	require.NoError(t, <-published)
	require.NoError(t, b.Close(ctx))
	require.Equal(t, []string{"o/1", "o/2", "o/3"}, g.handled.all(), "one worker: FIFO, nothing lost")
}

func TestBackpressureWithManyPublishersLosesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var handled atomic.Int64
	subscribe(t, b, func(context.Context, orderPlaced) error { handled.Add(1); return nil },
		bus.Async(3, 4), bus.KeyBy(func(e orderPlaced) string { return e.ID }))
	subscribe(t, b, func(context.Context, orderPlaced) error { handled.Add(1); return nil }, bus.Async(2, 1))

	const publishers, each = 8, 1000
	var wg sync.WaitGroup
	for p := range publishers {
		wg.Go(func() {
			for i := range each {
				if err := bus.PublishEvent(context.Background(), b, orderPlaced{ID: keyName(i % 10), Seq: p}); err != nil {
					t.Errorf("publish: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, b.Close(t.Context()))
	require.Equal(t, int64(2*publishers*each), handled.Load(), "N published = N handled, by both subscriptions")
}

func TestCloseDrainsQueuedEvents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var handled atomic.Int64
	release := make(chan struct{})
	subscribe(t, b, func(context.Context, orderPlaced) error {
		<-release
		handled.Add(1)
		return nil
	}, bus.Async(2, 1000), bus.KeyBy(func(e orderPlaced) string { return e.ID }))
	for i := range 500 {
		require.NoError(t, bus.PublishEvent(t.Context(), b, orderPlaced{ID: keyName(i % 7), Seq: i}))
	}

	closed := make(chan error)
	go func() { closed <- b.Close(context.Background()) }()
	close(release)
	require.NoError(t, <-closed)
	require.Equal(t, int64(500), handled.Load(), "Close returned only once everything queued was handled")
	require.ErrorIs(t, b.Publish(t.Context(), orderPlaced{}), bus.ErrClosed)
}

func TestCloseHonoursItsContextAndReportsWhatWasAbandoned(t *testing.T) {
	t.Parallel()
	var dead recorder
	b := setup(t, bus.WithDeadLetter(func(_ context.Context, err *bus.HandlerError) {
		dead.add(fmt.Sprintf("%s %s: %v", err.Handler, fmtEvent(err.Event), errors.Unwrap(err)))
	}))
	g := newGated()
	subscribe(t, b, g.handle, bus.Async(1, 10), bus.Name("slow"))
	for seq := 1; seq <= 3; seq++ {
		require.NoError(t, bus.PublishEvent(t.Context(), b, orderPlaced{ID: "o", Seq: seq}))
	}
	<-g.started

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := b.Close(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "2 events not started were abandoned")

	// The running handler saw its context end; a second Close waits for it.
	require.NoError(t, b.Close(t.Context()))
	require.ElementsMatch(t, []string{
		"slow o/1: context canceled",
		"slow o/2: " + bus.ErrAbandoned.Error(),
		"slow o/3: " + bus.ErrAbandoned.Error(),
	}, dead.all())
	require.Empty(t, g.handled.all())
}

func TestAsyncFailuresGoToTheDeadLetterCallback(t *testing.T) {
	t.Parallel()
	got := make(chan *bus.HandlerError, 2)
	b := setup(t, bus.WithDeadLetter(func(_ context.Context, err *bus.HandlerError) { got <- err }))
	subscribe(t, b, func(_ context.Context, e orderPlaced) error {
		if e.Seq == 1 {
			panic("boom")
		}
		return errors.New("refused")
	}, bus.Async(1, 10), bus.Name("worker"))

	require.NoError(t, b.Publish(t.Context(), orderPlaced{ID: "o", Seq: 1}, orderPlaced{ID: "o", Seq: 2}),
		"an asynchronous failure cannot be returned by Publish")
	first, second := <-got, <-got
	var pe *bus.PanicError
	require.ErrorAs(t, first, &pe)
	require.Equal(t, "boom", pe.Value)
	require.Equal(t, "worker", second.Handler)
	require.Equal(t, "bus_test.orderPlaced", second.EventType)
	require.EqualError(t, second, `bus: handler "worker" on bus_test.orderPlaced: refused`)
}

func TestAsyncFailuresAreLoggedWithoutADeadLetterCallback(t *testing.T) {
	t.Parallel()
	var buf syncBuffer
	b := setup(t, bus.WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
	subscribe(t, b, func(context.Context, orderPlaced) error { return errors.New("refused") }, bus.Async(1, 10), bus.Name("worker"))
	require.NoError(t, b.Publish(t.Context(), orderPlaced{ID: "o"}))
	require.NoError(t, b.Close(t.Context()))
	require.Contains(t, buf.String(), `level=ERROR msg="bus: asynchronous handler failed" handler=worker event=bus_test.orderPlaced error=refused`)
}

func TestAsyncKeyFunctionPanicIsAnError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	subscribe(t, b, func(context.Context, orderPlaced) error { return nil }, bus.Async(1, 1),
		bus.KeyBy(func(orderPlaced) string { panic("no key") }), bus.Name("keyed"))
	err := b.Publish(t.Context(), orderPlaced{})
	var pe *bus.PanicError
	require.ErrorAs(t, err, &pe)
	require.ErrorContains(t, err, `handler "keyed" on bus_test.orderPlaced: computing the event's key: panic: no key`)
}

func TestUnsubscribeAnAsyncSubscriptionDrainsItsQueue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	g := newGated()
	sub := subscribe(t, b, g.handle, bus.Async(1, 10))
	require.NoError(t, b.Publish(t.Context(), orderPlaced{ID: "o", Seq: 1}, orderPlaced{ID: "o", Seq: 2}))
	<-g.started
	sub.Unsubscribe()
	require.NoError(t, b.Publish(t.Context(), orderPlaced{ID: "o", Seq: 3}), "no longer delivered, and not an error")
	close(g.gate)
	require.NoError(t, b.Close(t.Context()))
	require.Equal(t, []string{"o/1", "o/2"}, g.handled.all())
}

// syncBuffer is a bytes.Buffer a logger can write to from a worker while
// the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
