package cli

import "time"

// WithStopBound returns env with the stop's and the drain's bounds (30 s
// each) replaced by d, so a test of a stop cut short does not wait 30 s.
func WithStopBound(env Env, d time.Duration) Env {
	env.stopBound = d
	return env
}
