package cli

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/passage-of-time/passage/outbox"
)

// relay is one sink's relay, with what /metrics and /healthz show of it.
type relay struct {
	name string
	r    *outbox.Relay
	wake chan struct{}

	// late records a delivery's lateness (metrics.watchRelays; nil
	// records nothing), lateMax the largest, in seconds.
	late    func(time.Duration)
	mu      sync.Mutex
	lateMax float64

	// failing: a database failure was logged, and no read worked since
	// (onError); seen is the relay's counts at the last look (recovered,
	// called by its one supervising goroutine).
	failing atomic.Bool
	seen    outbox.Stats
}

// observer counts a relay's lateness, logs each refusal once, with its
// next attempt, each parked record, and where a new sink started.
func (rl *relay) observer(logger *slog.Logger) outbox.Observer {
	return outbox.Observer{
		Started: rl.started(logger),
		Delivered: func(_ outbox.Message, late time.Duration) {
			if rl.late != nil {
				rl.late(late)
			}
			rl.mu.Lock()
			defer rl.mu.Unlock()
			rl.lateMax = max(rl.lateMax, late.Seconds())
		},
		Refused: func(m outbox.Message, err error, next time.Time) {
			// Once per record: a receiver down for an hour would otherwise
			// log every retry of every record behind it. The later
			// refusals are counted (passage_delivery_records_refused_total).
			if m.Attempt == 1 {
				logger.Warn("delivery refused; retried with backoff under the same key (further refusals of it are counted, not logged)",
					"sink", rl.name, "key", m.Key, "type", m.Type, "next_attempt", next, "err", err)
			}
		},
		Parked: func(m outbox.Message, err error) {
			logger.Error("delivery refused too often; the record is parked (ticker status and /metrics show it)",
				"sink", rl.name, "key", m.Key, "type", m.Type, "attempts", m.Attempt, "err", err)
		},
	}
}

// started logs where a sink new to the database started, once, when
// that says something: the records it leaves behind, or where --from
// put it. A sink the database knows resumes without a word, and so does
// a new one starting now on an outbox holding nothing older (a first
// run): there is nothing to tell.
func (rl *relay) started(logger *slog.Logger) func(outbox.Origin) {
	return func(o outbox.Origin) {
		if o.Resumed || o.From == outbox.FromNow && o.Skipped == 0 {
			return
		}
		args := []any{"sink", rl.name, "from", o.From.String()}
		if !o.At.IsZero() {
			args = append(args, "at", o.At)
		}
		args = append(args, "after_record", o.After, "not_delivered", o.Skipped)
		msg := "a sink new to the database starts here; it is not offered the records before it (--from beginning would)"
		if o.From == outbox.FromBeginning {
			msg = "a sink new to the database starts from the oldest record held (--from beginning)"
		}
		logger.Info(msg, args...)
	}
}

// requestsKey marks the context Run passes to a sink with the context
// its request is to honour (withRequests).
type requestsKey struct{}

// withRequests returns runCtx carrying requests: a Deliver called with
// it sends its request under requests (requestsOf), so the relay's end
// (runCtx: a stop, a lease lost) lets the requests in flight finish, and
// only requests' end (the stop's bound) cuts them short.
func withRequests(runCtx, requests context.Context) context.Context {
	return context.WithValue(runCtx, requestsKey{}, requests)
}

// requestsOf is the context a delivery's request honours: the one
// withRequests set, or ctx itself (a pass, whose caller bounds it).
func requestsOf(ctx context.Context) context.Context {
	if r, ok := ctx.Value(requestsKey{}).(context.Context); ok {
		return r
	}
	return ctx
}

// onError logs a relay's failed database operation once while they
// fail: a database down for an hour would otherwise log one at every
// poll. They are all counted (passage_delivery_pass_failures_total), and
// the next is logged again once a read worked (recovered).
func (rl *relay) onError(logger *slog.Logger) func(error) {
	return func(err error) {
		if rl.failing.CompareAndSwap(false, true) {
			logger.Error("delivery failed on the database; retried at the next poll (further failures are counted, not logged, until it works again)", "sink", rl.name, "err", err)
		}
	}
}

// recovered clears the failing state once the relay read the outbox
// without a failure since the last look.
func (rl *relay) recovered() {
	s := rl.r.Stats()
	if s.Passes > rl.seen.Passes && s.Failed == rl.seen.Failed {
		rl.failing.Store(false)
	}
	rl.seen = s
}
