package ordersvc

import (
	"context"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/passage-of-time/passage/tick"
)

// minutes is what the consumer publishes to: it sets the clock to each
// minute before the local handlers see it, when the service follows the
// stream's time, and runs after once they succeeded.
type minutes struct {
	// clock is nil when the service runs on the real clock.
	clock *clockwork.FakeClock
	local tick.Publisher
	after func(ctx context.Context, at time.Time) error
}

// Publish hands events to the local bus; a failure is the consumer's to
// retry, with the clock already at the minute (a clock never goes back).
func (m *minutes) Publish(ctx context.Context, events ...any) error {
	for _, ev := range events {
		e, ok := ev.(tick.MinuteHasPassed)
		if ok && m.clock != nil {
			// The to-do list takes what is due by the boundary, capped
			// by its clock's now: without this a simulated minute would
			// find nothing due.
			if d := e.At.Sub(m.clock.Now()); d > 0 {
				m.clock.Advance(d)
			}
		}
		if err := m.local.Publish(ctx, ev); err != nil {
			return err
		}
		if ok {
			if err := m.after(ctx, e.At); err != nil {
				return err
			}
		}
	}
	return nil
}
