package cli

import (
	"io"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/passage-of-time/passage/tick"
)

// Env is what the command reads from and writes to outside its arguments.
type Env struct {
	Stdout, Stderr io.Writer
	// Getenv reads environment variables (webhook secrets). Nil reads none.
	Getenv func(string) string
	// Clock is the time source; nil means the real clock.
	Clock clockwork.Clock
	// Started, when set, is called by "run" with its ticker once started,
	// so tests can drive it (tick.AdvanceAndWait) instead of sleeping.
	Started func(*tick.Ticker)
	// Grace, when positive, replaces every command's grace period: how
	// long Main waits for the command after ctx is cancelled before it
	// returns ExitAbandoned.
	Grace time.Duration

	// stopBound, when positive, replaces stopTimeout and drainTimeout
	// (export_stop_test.go), so a test of a stop cut short by its bound
	// does not wait 30 s.
	stopBound time.Duration

	// next computes preview's boundaries; nil means tick.Next. Tests
	// replace it with one that never returns (export_test.go).
	next func(tick.Unit, time.Time, *time.Location) time.Time
}

func (e Env) getenv(k string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(k)
}

func (e Env) stopTimeout() time.Duration {
	if e.stopBound > 0 {
		return e.stopBound
	}
	return stopTimeout
}

func (e Env) drainTimeout() time.Duration {
	if e.stopBound > 0 {
		return e.stopBound
	}
	return drainTimeout
}

func (e Env) clock() clockwork.Clock {
	if e.Clock == nil {
		return clockwork.NewRealClock()
	}
	return e.Clock
}

// stopTimeout bounds how long a stopping ticker may take to finish the
// emission in flight after SIGINT/SIGTERM.
const stopTimeout = 30 * time.Second
