package cli

import (
	"context"
	"sync"
	"time"
)

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
