package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
)

// serve runs the ticker and the relays until ctx ends, then stops within
// the stop bound (stopTimeout): the ticker finishes its pass in flight,
// the relays the requests in flight (a webhook's answer, or its 10 s
// timeout), and then, if this process held the lease, it delivers what
// is left. What the bound cuts short stays in the outbox for the next
// holder; the lease is released either way, and a line on stderr says
// where the cursors are and how many records were left. A stop cut short
// by its bound is not a failure: nothing is lost.
func (r *runner) serve(ctx context.Context) error {
	srv, err := r.listen(ctx)
	if err != nil {
		return err
	}
	if err := r.ticker.Start(ctx); err != nil {
		return err
	}
	relayCtx, stopRelays := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRelays()
	stopping, relaysDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(relaysDone)
		r.out.run(relayCtx, stopping, r.ticker.HoldsLease)
	}()
	sinks := make([]string, len(r.out.relays))
	for i, rl := range r.out.relays {
		sinks[i] = rl.name
	}
	fmt.Fprintf(r.env.Stderr, "running as %s: units %s in %s, delivering to %s, while this process holds the lease (SIGINT or SIGTERM stops it within %s)\n",
		r.cfg.holder, r.cfg.unitsText, r.cfg.loc, strings.Join(sinks, " and "), r.env.stopTimeout())
	if r.env.Started != nil {
		r.env.Started(r.ticker)
	}
	<-ctx.Done()
	return r.stop(ctx, srv, func(stopCtx context.Context) {
		// The relays finish the pass in flight (its requests get their
		// answers, so nothing taken is offered again), within the stop's
		// bound.
		close(stopping)
		select {
		case <-relaysDone:
		case <-stopCtx.Done():
			stopRelays()
			<-relaysDone
		}
	})
}

// listen serves /healthz, /metrics and the dashboard on --http, when
// given (nil otherwise).
func (r *runner) listen(ctx context.Context) (*http.Server, error) {
	if r.cfg.httpAddr == "" {
		return nil, nil
	}
	d, err := openDashboard(ctx, r.env, dashboardOf{
		db: r.db, clock: r.clock, loc: r.cfg.loc, token: r.cfg.adminToken, logger: r.logger, out: r.out, metrics: r.metrics,
	})
	if err != nil {
		return nil, err
	}
	d.Start(ctx) // the lag chart's samples; ends with ctx
	ln, err := net.Listen("tcp", r.cfg.httpAddr)
	if err != nil {
		return nil, fmt.Errorf("--http %s: %w", r.cfg.httpAddr, err)
	}
	srv := serveHTTP(ln, observability(runHealth(r.ticker, r.db, r.out), r.tel), d)
	fmt.Fprintf(r.env.Stderr, "serving /healthz, /metrics and the dashboard on http://%s\n", ln.Addr())
	return srv, nil
}

// stop stops the ticker, the relays (stopRelays) and the server within
// the stop bound, delivers what this holder recorded, releases the lease
// and says where everything stands.
func (r *runner) stop(ctx context.Context, srv *http.Server, stopRelays func(context.Context)) error {
	held := r.ticker.HoldsLease()
	bound := r.env.stopTimeout()
	fmt.Fprintf(r.env.Stderr, "stopping: finishing the pass and the deliveries in flight, then delivering what is recorded (at most %s)\n", bound)
	// The run's context is over; stopping gets a fresh one so the emission
	// in flight can finish and save its cursor.
	stopCtx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	var errs []error
	var notes []string
	if err := r.ticker.Stop(stopCtx); err != nil {
		if stopCtx.Err() == nil {
			errs = append(errs, fmt.Errorf("stop ticker: %w", err))
		}
		notes = append(notes, fmt.Sprintf("the pass in flight was abandoned at the %s bound", bound))
	}
	stopRelays(stopCtx)
	var dr drained
	if held {
		// The last records of this holder, delivered before exiting; a
		// new holder may deliver some of them again (at least once).
		dr = r.out.drain(stopCtx, r.env.drainTimeout())
		errs = append(errs, dr.err())
	}
	if srv != nil {
		shutCtx, cancelShut := context.WithTimeout(context.Background(), time.Second)
		if stopCtx.Err() == nil {
			shutCtx, cancelShut = stopCtx, func() {}
		}
		errs = append(errs, srv.Shutdown(shutCtx))
		cancelShut()
	}
	// Stop released the lease, unless it was cut short: release it now,
	// briefly (a standby takes over without waiting --lease-ttl).
	lease := "lease released"
	if !held {
		lease = "lease not held"
	}
	if err := releaseLeaseWithin(ctx, r.ticker, time.Second); err != nil {
		lease = fmt.Sprintf("%v: it lapses after --lease-ttl", err)
	}
	line := "stopped; " + cursorsLine(ctx, r.store, r.cfg.loc) + "; " + lease
	// The stop's line counts what the whole run delivered, the drain's
	// included: the drain alone found little to do after the relays (it
	// said "delivered 0 records" after a run that delivered them all).
	total := r.out.total()
	if held {
		dr.delivered, dr.parked = int(total.Delivered), int(total.Parked)
		line += "; " + dr.summary()
	} else {
		if total.Delivered > 0 {
			line += fmt.Sprintf("; delivered %s while it held the lease", plural(int(total.Delivered), "record", "records"))
		}
		if left := r.out.leftover(ctx); left != "" {
			line += "; " + left
		}
	}
	for _, n := range notes {
		line += "; " + n
	}
	fmt.Fprintln(r.env.Stderr, line)
	return errors.Join(errs...)
}

// serveHTTP serves /healthz and /metrics by obs, and the rest by dash, on
// ln until shut down.
func serveHTTP(ln net.Listener, obs, dash http.Handler) *http.Server {
	mux := http.NewServeMux()
	mux.Handle("/healthz", obs)
	mux.Handle("/metrics", obs)
	mux.Handle("/", dash)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return srv
}
