package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/passage-of-time/passage/internal/timefmt"
	"github.com/passage-of-time/passage/tick"
)

// once is "run --once": one pass, the outbox drained while the lease is
// held, the lease released so that a timer on another host can emit a
// moment later, and one line on stderr saying what was done (stdout
// carries only events). With schedules, it also fires what is due by now,
// not only by the last minute boundary: a timer that runs it at 12:00:40
// fires a 12:00:30 slot then, not at the next run. What a sink refused is
// left in the outbox, for the next run to retry.
func (r *runner) once(ctx context.Context) error {
	before, err := r.store.Cursors(ctx)
	if err != nil {
		return fmt.Errorf("read cursors: %w", err)
	}
	err = r.ticker.EmitDue(ctx)
	if err == nil && r.fire != nil {
		err = r.fire.process(ctx, r.clock.Now())
	}
	if ctx.Err() != nil && err != nil {
		return r.interrupted(ctx, "once: stopped by a signal before its pass was done")
	}
	var dr drained
	var pr pruned
	if err == nil {
		dr = r.out.drain(ctx, r.env.drainTimeout())
		err = dr.err()
	}
	if err == nil {
		// Pruned while the lease is held, as "run" prunes.
		pr, err = r.out.pruneOnce(ctx)
	}
	released := releaseLease(ctx, r.ticker)
	if err := errors.Join(err, released); err != nil {
		return err
	}
	after, err := r.store.Cursors(ctx)
	if err != nil {
		return fmt.Errorf("read cursors: %w", err)
	}
	line := r.metrics.summary(before, after, r.cfg.loc)
	if r.fire != nil {
		if n := r.fire.runs.Load(); n > 0 {
			line += fmt.Sprintf("; fired %s", plural(int(n), "schedule run", "schedule runs"))
		}
	}
	fmt.Fprintln(r.env.Stderr, line+"; "+dr.summary()+pr.String())
	return nil
}

// backfill is "run --until": every boundary up to it, marked catch_up,
// delivered while the lease is held, the lease released after.
func (r *runner) backfill(ctx context.Context) error {
	until := r.cfg.until
	err := r.ticker.EmitUntil(ctx, until)
	if ctx.Err() != nil && err != nil && !errors.Is(err, tick.ErrNothingToBackfill) {
		// A signal before --until was reached: what was recorded stays
		// in the outbox, for the next run to deliver.
		return r.interrupted(ctx, fmt.Sprintf("stopped by a signal before --until %s", timefmt.Format(until)))
	}
	var dr drained
	var pr pruned
	if err == nil {
		// Delivered while the lease is held: another replica's relay
		// would deliver the same records beside this one.
		dr = r.out.drain(ctx, r.env.drainTimeout())
		err = dr.err()
	}
	if err == nil {
		pr, err = r.out.pruneOnce(ctx)
	}
	err = errors.Join(err, releaseLease(ctx, r.ticker))
	if errors.Is(err, tick.ErrNothingToBackfill) {
		// Running the same backfill twice is harmless: say so, exit 0.
		fmt.Fprintf(r.env.Stderr, "nothing to backfill up to %s: %v\n", timefmt.Format(until), err)
		return nil
	}
	if err == nil {
		fmt.Fprintf(r.env.Stderr, "backfilled up to %s: %s%s\n", timefmt.Format(until), dr.summary(), pr.String())
	}
	return err
}

// interrupted ends "run --once" or "run --until" stopped by a signal
// before its work was done: the lease is released, what was recorded
// stays in the outbox (the next run delivers it), and one line says
// where the cursors are.
func (r *runner) interrupted(ctx context.Context, what string) error {
	line := what
	if err := releaseLease(ctx, r.ticker); err != nil {
		line += fmt.Sprintf("; %v (it lapses after --lease-ttl)", err)
	} else {
		line += "; lease released"
	}
	line += "; " + r.out.leftover(ctx) + "; " + cursorsLine(ctx, r.store, time.UTC)
	return interruptedError{line}
}

// cursorsLine is "cursors at minute T, hour T" as the store has them now.
func cursorsLine(ctx context.Context, store *tick.SQLStore, loc *time.Location) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	cursors, err := store.Cursors(ctx)
	if err != nil {
		return fmt.Sprintf("cursors unknown (%v)", err)
	}
	var parts []string
	for _, u := range tick.Units() {
		if c, ok := cursors[u]; ok {
			parts = append(parts, fmt.Sprintf("%s %s", u, timefmt.Format(c.In(loc))))
		}
	}
	if len(parts) == 0 {
		return "no cursor yet"
	}
	return "cursors at " + strings.Join(parts, ", ")
}

// releaseLease gives up the lease EmitDue or EmitUntil took, through
// Stop, so that a timer on another host can emit a moment later instead of
// waiting --lease-ttl for it to lapse. It runs even when ctx was cancelled
// (a signal), within a bound of its own.
func releaseLease(ctx context.Context, ticker *tick.Ticker) error {
	return releaseLeaseWithin(ctx, ticker, 5*time.Second)
}

// releaseLeaseWithin is releaseLease within d.
func releaseLeaseWithin(ctx context.Context, ticker *tick.Ticker, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d)
	defer cancel()
	if err := ticker.Stop(ctx); err != nil {
		return fmt.Errorf("release the lease: %w", err)
	}
	return nil
}
