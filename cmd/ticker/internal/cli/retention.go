package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/passage-of-time/passage/outbox"
)

// Retention in "ticker run" (issue 34): the records every sink has
// passed are pruned after --outbox-retention, by the process that holds
// the ticker's lease; a sink the database has never seen starts where
// --from says.

// retentionFlags are --outbox-retention and --from as given.
type retentionFlags struct {
	retention time.Duration
	from      string
}

// addRetention declares --outbox-retention and --from.
func addRetention(c *cobra.Command) *retentionFlags {
	f := &retentionFlags{}
	fs := c.Flags()
	fs.DurationVar(&f.retention, "outbox-retention", outbox.DefaultRetention,
		"how long a record every sink has taken (or parked) is kept in the outbox before it is pruned, by the replica that holds the lease (at start, then every minute; --once and --until prune once before they exit); 0 keeps every record")
	fs.StringVar(&f.from, "from", "now",
		"start a sink new to --db (a first --nats, a new --webhook URL) from `beginning|now|INSTANT`: every record the outbox holds, the records written from when this command starts, or those recorded at or after an RFC 3339 instant such as 2026-11-26T09:00:00Z; a sink the database knows resumes where it stopped")
	return f
}

// onceBound bounds the pruning of "run --once" and "run --until" after
// their delivery: a first run on a database holding years of delivered
// records prunes the rest at its next runs rather than holding an
// external timer up.
const onceBound = 10 * time.Second

// check reads the flags: the retention (not negative) and where a new
// sink starts.
func (f *retentionFlags) check() (time.Duration, outbox.From, error) {
	if f.retention < 0 {
		return 0, outbox.From{}, usagef("--outbox-retention %s: must not be negative (0 keeps every record)", f.retention)
	}
	from, err := outbox.ParseFrom(f.from)
	if err == nil {
		return f.retention, from, nil
	}
	if _, perr := time.Parse(time.RFC3339Nano, f.from); perr == nil {
		return 0, from, usagef("--from %q: outside the years the outbox records (%d to %d)", f.from, minStorable.Year(), maxStorable.Year())
	}
	return 0, from, usagef("--from %q: want beginning, now or an RFC 3339 instant such as 2026-11-26T09:00:00Z", f.from)
}

// pruneWhileHeld prunes the outbox (--outbox-retention) while this
// process holds the lease, as follow delivers: one pruner per database
// is enough, and a standby's would only delete the same batches again.
// It first has every relay decide where its sink starts (Relay.Origin),
// so that a new sink is counted before anything is pruned: pruning
// first could delete what --from beginning asked for. Stopping or the
// lease lost ends the pruner within its batch in flight (a statement of
// its own: cut short, it deletes nothing), and it returns once the
// pruner did.
func (d *delivery) pruneWhileHeld(ctx context.Context, stopping <-chan struct{}, holds func() bool) {
	poll := time.NewTicker(relayPoll)
	defer poll.Stop()
	for {
		if holds() && d.originsDecided(ctx) && !d.pruneUntilLost(ctx, stopping, holds, poll.C) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-stopping:
			return
		case <-poll.C:
		}
	}
}

// originsDecided has every relay decide where its sink starts; false
// when one could not (the database: the relay logs it, and the next poll
// tries again).
func (d *delivery) originsDecided(ctx context.Context) bool {
	for _, rl := range d.relays {
		if _, err := rl.r.Origin(ctx); err != nil {
			return false
		}
	}
	return true
}

// pruneUntilLost runs the pruner until the lease is lost (true: wait to
// hold it again) or the run stops (false). The lease counts as lost when
// it is not held at two polls in a row, as deliverWhileHeld says why.
func (d *delivery) pruneUntilLost(ctx context.Context, stopping <-chan struct{}, holds func() bool, poll <-chan time.Time) bool {
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = d.box.RunPruner(runCtx, d.retention, func(err error) {
			// At most once a turn (a minute): not worth a dedup.
			d.logger.Error("pruning the outbox failed; tried again in a minute", "retention", d.retention, "err", err)
		})
	}()
	defer func() {
		cancel()
		<-done
	}()
	for notHeld := 0; notHeld < 2; {
		select {
		case <-ctx.Done():
			return false
		case <-stopping:
			return false
		case <-poll:
			if holds() {
				notHeld = 0
			} else {
				notHeld++
			}
		}
	}
	return true
}

// pruned is what pruneOnce did, for the stderr line of "run --once" and
// "run --until".
type pruned struct {
	n         int
	retention time.Duration
	bounded   bool // onceBound cut it short
}

// String is "; pruned N records …", or "" when nothing was.
func (p pruned) String() string {
	if p.n == 0 && !p.bounded {
		return ""
	}
	s := fmt.Sprintf("; pruned %s older than %s (--outbox-retention)", plural(p.n, "record", "records"), p.retention)
	if p.bounded {
		s += fmt.Sprintf(", the rest at the next run (pruning is bounded to %s)", onceBound)
	}
	return s
}

// pruneOnce prunes the outbox once, within onceBound, for a run that
// holds the lease and exits ("run --once", "run --until"), after every
// relay decided where its sink starts. A signal (ctx cancelled) stops
// it without an error: what it deleted stays deleted, the rest waits.
func (d *delivery) pruneOnce(ctx context.Context) (pruned, error) {
	p := pruned{retention: d.retention}
	if d.retention == 0 || ctx.Err() != nil {
		return p, nil
	}
	for _, rl := range d.relays {
		if _, err := rl.r.Origin(ctx); err != nil {
			return p, err
		}
	}
	bctx, cancel := context.WithTimeout(ctx, onceBound)
	defer cancel()
	var err error
	p.n, err = d.box.Prune(bctx, d.retention)
	switch {
	case ctx.Err() != nil:
		return p, nil
	case errors.Is(err, context.DeadlineExceeded) && bctx.Err() != nil:
		p.bounded = true
		return p, nil
	}
	return p, err
}
