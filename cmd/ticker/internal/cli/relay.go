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

// run delivers until stopping is closed, each relay on a goroutine of
// its own, only while holds says this process holds the ticker's lease:
// a standby delivers nothing, and takes over from the checkpoints when it
// takes the lease. Each relay delivers through Relay.Run, every stream on
// its own (a receiver stalled on one record holds that stream and one
// request, not the others), and Pass is left to the drains. Stopping
// starts no more requests, and those in flight get their answers: what
// the sink took is recorded and not offered again. ctx ending cuts them
// short (the stop's deadline). It returns once every relay has stopped.
func (d *delivery) run(ctx context.Context, stopping <-chan struct{}, holds func() bool) {
	var wg sync.WaitGroup
	for _, rl := range d.relays {
		wg.Go(func() { d.follow(ctx, stopping, rl, holds) })
	}
	// A holder of the horizon is logged on every replica, the standbys
	// included: it holds back whichever delivers.
	wg.Go(func() { d.horizon.watch(ctx, stopping) })
	if d.retention > 0 {
		wg.Go(func() { d.pruneWhileHeld(ctx, stopping, holds) })
	}
	wg.Wait()
}

// follow runs rl's relay whenever this process holds the lease, and
// waits for it otherwise: it looks at every commit of this process
// (rl.wake) and at every poll, in real time — a standby takes the lease
// on its own ticker's pass, and a lease is a matter of the database.
func (d *delivery) follow(ctx context.Context, stopping <-chan struct{}, rl *relay, holds func() bool) {
	poll := time.NewTicker(relayPoll)
	defer poll.Stop()
	for {
		if holds() && !d.deliverWhileHeld(ctx, stopping, rl, holds, poll.C) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-stopping:
			return
		case <-rl.wake:
		case <-poll.C:
		}
	}
}

// deliverWhileHeld runs rl's relay until the lease is lost (it returns
// true: follow waits to hold it again) or the run stops (false). The
// relay's context ends then, so it offers nothing more; a request in
// flight is not cut short by it (requestsOf): it gets its answer, and
// what the sink took is recorded before Run returns. Only ctx ending
// (the stop's bound) cuts requests short.
//
// The lease counts as lost when it is not held at two polls in a row: a
// single reading can fall between a jump of the ticker's clock (a
// machine waking from suspend, a test's fake clock) and the pass that
// renews the lease, and losing it for nothing would wait out every
// request in flight, a stalled one included, before delivering again.
// A lease really lost stays lost; the second poll costs a second of
// overlap with the new holder, which the outbox tolerates (delivered at
// least once, never skipped).
func (d *delivery) deliverWhileHeld(ctx context.Context, stopping <-chan struct{}, rl *relay, holds func() bool, poll <-chan time.Time) bool {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = rl.r.Run(withRequests(runCtx, ctx), rl.onError(d.logger))
	}()
	notHeld := 0
	for lost := false; !lost; {
		select {
		case <-ctx.Done():
			cancel()
			<-done
			return false
		case <-stopping:
			cancel()
			<-done
			return false
		case <-rl.wake: // notify told the relay itself
		case <-poll:
			rl.recovered()
			if holds() {
				notHeld = 0
			} else {
				notHeld++
			}
			lost = notHeld >= 2
		}
	}
	cancel()
	select {
	case <-done:
		return true
	case <-stopping: // the requests in flight finish all the same
		<-done
		return false
	case <-ctx.Done():
		<-done
		return false
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
