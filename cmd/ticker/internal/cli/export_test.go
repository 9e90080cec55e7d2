package cli

import (
	"time"

	"github.com/passage-of-time/passage/tick"
)

// WithNextBoundary returns env with preview's boundary computation replaced
// by next, so a test can make preview hang the way a boundary computation
// that never yields does.
func WithNextBoundary(env Env, next func(tick.Unit, time.Time, *time.Location) time.Time) Env {
	env.next = next
	return env
}
