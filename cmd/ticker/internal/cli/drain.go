package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/passage-of-time/passage/outbox"
)

// drained is what a drain delivered and left, summed over the sinks.
type drained struct {
	delivered, parked int
	left, waiting     int // pending at the end; of them, refused and waiting for a retry
	// bounded: the drain reached its time bound; signalled: it stopped
	// for a signal. Either leaves what is pending for the next run (or
	// the next holder of the lease); neither is a failure.
	bounded, signalled bool
	errs               []error
}

// drain delivers what is committed, relay by relay, until nothing more
// is pending or only what waits for a retry after a refusal (and what
// waits behind it) is: that is left for the next run. A record the
// relay cannot read yet (PostgreSQL: an older transaction still runs)
// is waited for. The whole drain is bounded by timeout and by ctx's
// deadline, if it has one. ctx's cancellation (a signal) does not cut a
// pass short — its requests get their answers, or the sink's own
// timeout, so nothing taken is offered again — but no pass starts after
// it.
func (d *delivery) drain(ctx context.Context, timeout time.Duration) drained {
	pctx := context.WithoutCancel(ctx)
	if dl, ok := ctx.Deadline(); ok {
		var cancelDeadline context.CancelFunc
		pctx, cancelDeadline = context.WithDeadline(pctx, dl)
		defer cancelDeadline()
	}
	pctx, cancel := context.WithTimeout(pctx, timeout)
	defer cancel()
	var out drained
	stop := func() bool {
		switch {
		case pctx.Err() != nil:
			out.bounded = true
		case ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded):
			out.signalled = true
		default:
			return false
		}
		return true
	}
	for _, rl := range d.relays {
		for !stop() {
			res, err := rl.r.Pass(pctx)
			out.delivered += res.Delivered
			out.parked += res.Parked
			if err != nil {
				if !stop() {
					out.errs = append(out.errs, err)
				}
				break
			}
			if res.More || res.Delivered+res.Parked > 0 {
				continue
			}
			b, err := rl.r.Backlog(pctx)
			if err != nil {
				if !stop() {
					out.errs = append(out.errs, err)
				}
				break
			}
			if b.Pending == 0 || b.Waiting > 0 {
				break
			}
			// Committed, not readable yet: the horizon is a matter of the
			// database's transactions, waited for in real time.
			t := time.NewTimer(20 * time.Millisecond)
			select {
			case <-pctx.Done():
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
		bctx, cancelBacklog := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		if b, err := rl.r.Backlog(bctx); err == nil {
			out.left += b.Pending
			out.waiting += b.Waiting
		}
		cancelBacklog()
	}
	return out
}

// total is what every relay of d delivered and parked since it opened,
// by Pass or Run.
func (d *delivery) total() outbox.Stats {
	var t outbox.Stats
	for _, rl := range d.relays {
		s := rl.r.Stats()
		t.Delivered += s.Delivered
		t.Parked += s.Parked
	}
	return t
}

// leftover says how many records every sink has yet to take, for the
// line a stopping command prints ("" when that cannot be read).
func (d *delivery) leftover(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	left := 0
	for _, rl := range d.relays {
		b, err := rl.r.Backlog(ctx)
		if err != nil {
			return ""
		}
		left += b.Pending
	}
	if left == 0 {
		return "nothing left in the outbox"
	}
	return fmt.Sprintf("%s left in the outbox (the next run, or the next holder of the lease, delivers them)", plural(left, "record", "records"))
}

// summary says what a drain did, for the stderr line of a run-once
// command.
func (o drained) summary() string {
	s := fmt.Sprintf("delivered %s", plural(o.delivered, "record", "records"))
	if o.parked > 0 {
		s += fmt.Sprintf(", parked %d", o.parked)
	}
	if o.left > 0 {
		s += fmt.Sprintf(", %d left in the outbox", o.left)
		switch {
		case o.signalled:
			s += " (stopped by a signal: the next run, or the next holder of the lease, delivers them)"
		case o.bounded:
			s += " (delivery reached its time bound: the next run, or the next holder of the lease, delivers them)"
		case o.waiting > 0:
			s += fmt.Sprintf(" (%d refused, retried with their streams by the next run)", o.waiting)
		}
	}
	if len(o.errs) > 0 {
		msgs := make([]string, len(o.errs))
		for i, err := range o.errs {
			msgs[i] = err.Error()
		}
		s += " (delivery failed: " + strings.Join(msgs, "; ") + ")"
	}
	return s
}

// err is the drain's failure (the database, not a sink), if any.
func (o drained) err() error { return errors.Join(o.errs...) }
