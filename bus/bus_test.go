package bus_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/passage-of-time/passage/bus"
)

// The ticker publishes through this interface, which *bus.Bus must satisfy.
var _ interface {
	Publish(ctx context.Context, events ...any) error
} = (*bus.Bus)(nil)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// The events of the tests: two kinds of tick behind one interface, as
// tick.Event is, and an order event to key asynchronous delivery by.
type (
	tickEvent interface{ Unit() string }
	minute    struct{ N int }
	day       struct{ N int }

	orderPlaced struct {
		ID  string
		Seq int
	}
)

func (minute) Unit() string { return "minute" }
func (day) Unit() string    { return "day" }

// setup returns a bus that is closed, draining, when the test ends.
func setup(t *testing.T, opts ...bus.Option) *bus.Bus {
	t.Helper()
	b, err := bus.New(opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close(context.Background())) })
	return b
}

func subscribe[E any](t *testing.T, b *bus.Bus, h func(context.Context, E) error, opts ...bus.SubscribeOption) *bus.Subscription {
	t.Helper()
	sub, err := bus.Subscribe(b, h, opts...)
	require.NoError(t, err)
	return sub
}

// recorder collects what handlers saw, from any goroutine.
type recorder struct {
	mu   sync.Mutex
	seen []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, s)
}

func (r *recorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

// record returns a handler that records name and the event, and returns err.
func record[E any](r *recorder, name string, err error) func(context.Context, E) error {
	return func(_ context.Context, e E) error {
		r.add(name + ":" + fmtEvent(e))
		return err
	}
}

func fmtEvent(e any) string {
	switch e := e.(type) {
	case minute:
		return fmt.Sprintf("minute%d", e.N)
	case day:
		return fmt.Sprintf("day%d", e.N)
	case orderPlaced:
		return fmt.Sprintf("%s/%d", e.ID, e.Seq)
	}
	return fmt.Sprintf("%T", e)
}
