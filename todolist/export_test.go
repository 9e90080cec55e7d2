package todolist

import "time"

// WithRenewalHook has f told the answer of every lease renewal, so that a
// test can wait for one instead of sleeping.
func WithRenewalHook(f func(held bool, err error)) ProcessorOption {
	return func(cfg *processorConfig) error {
		cfg.renewed = f
		return nil
	}
}

// SetAddManyChunk makes each statement of l's AddMany write at most n
// items, so that a test crosses chunk boundaries with a few items.
func SetAddManyChunk(l *List, n int) { l.addChunk = n }

// OnRunnerSleep lets a test see each wait of r once its timer is armed.
func OnRunnerSleep(r *Runner, f func(wait time.Duration)) { r.sleeping = f }
