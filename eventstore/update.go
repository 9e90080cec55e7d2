package eventstore

import (
	"context"
	"errors"
	"fmt"
)

// UpdateResult is the outcome of [Update].
type UpdateResult[S any] struct {
	// State is the aggregate after the appended events, or as loaded when
	// the decision returned none.
	State S
	// Version is the stream's version after the update.
	Version int64
	// Recorded are the appended events; empty when the decision returned
	// none.
	Recorded []Recorded
	// Attempts counts load-decide-append rounds, 1 without conflicts.
	Attempts int
}

// UpdateOption configures [Update]. Options validate their argument and make
// Update fail with [ErrInvalidArgument] when it is unusable.
type UpdateOption func(*updateConfig) error

type updateConfig struct {
	retries int
}

// WithRetries lets [Update] start over (reload, decide, append) up to n more
// times when it loses an append to a concurrent writer, at once, without
// waiting. The default is 0: the first conflict is returned.
func WithRetries(n int) UpdateOption {
	return func(c *updateConfig) error {
		if n < 0 {
			return fmt.Errorf("%w: WithRetries(%d): retries must not be negative", ErrInvalidArgument, n)
		}
		c.retries = n
		return nil
	}
}

// Get loads stream and folds its events into initial with evolve, returning
// the state and the stream's version (0 for a stream without events).
func Get[S any](ctx context.Context, store *Store, stream string, initial S, evolve func(S, any) S) (S, int64, error) {
	recorded, err := store.Load(ctx, stream, 0)
	if err != nil {
		return initial, 0, err
	}
	state, version := initial, int64(0)
	for _, r := range recorded {
		state = evolve(state, r.Event)
		version = r.Version
	}
	return state, version, nil
}

// Update runs one command against the aggregate in stream: it loads and
// folds the stream (see [Get]), asks decide for new events, and appends them
// expecting the version it loaded, so a decision taken on stale state never
// lands. A decision of no events appends nothing and is no error (an order
// already closed has nothing to cancel). An error from decide is returned
// as is, with nothing appended.
//
// On a [*VersionConflictError] it starts over from initial, up to
// [WithRetries] times, then returns the conflict. evolve must not modify
// initial: every attempt folds from it again. A publish failure after commit
// is returned with the result, as by [Store.Append].
func Update[S any](ctx context.Context, store *Store, stream string, initial S, evolve func(S, any) S, decide func(S) ([]any, error), opts ...UpdateOption) (UpdateResult[S], error) {
	var cfg updateConfig
	for _, opt := range opts {
		if err := opt(&cfg); err != nil {
			return UpdateResult[S]{}, fmt.Errorf("eventstore: update stream %q: %w", stream, err)
		}
	}
	for attempt := 1; ; attempt++ {
		state, version, err := Get(ctx, store, stream, initial, evolve)
		if err != nil {
			return UpdateResult[S]{Attempts: attempt}, err
		}
		events, err := decide(state)
		if err != nil {
			return UpdateResult[S]{State: state, Version: version, Attempts: attempt}, err
		}
		if len(events) == 0 {
			return UpdateResult[S]{State: state, Version: version, Attempts: attempt}, nil
		}
		res, err := store.Append(ctx, stream, Exact(version), events...)
		if err != nil && !errors.Is(err, ErrPublish) {
			if errors.Is(err, ErrWrongExpectedVersion) && attempt <= cfg.retries && ctx.Err() == nil {
				continue
			}
			if errors.Is(err, ErrWrongExpectedVersion) && cfg.retries > 0 {
				err = fmt.Errorf("eventstore: update stream %q: gave up after %d attempts: %w", stream, attempt, err)
			}
			return UpdateResult[S]{State: state, Version: version, Attempts: attempt}, err
		}
		for _, r := range res.Recorded {
			state = evolve(state, r.Event)
		}
		return UpdateResult[S]{State: state, Version: res.Version, Recorded: res.Recorded, Attempts: attempt}, err
	}
}
