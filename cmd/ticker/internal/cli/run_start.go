package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jonboulle/clockwork"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/tick"
)

// runner is "ticker run" wired together: the ticker on its cursor store,
// publishing into the outbox (through the schedules' firing when there
// are schedules), the relays that deliver from it, and the telemetry.
type runner struct {
	env     Env
	cfg     runConfig
	clock   clockwork.Clock
	logger  *slog.Logger
	senders []sender
	db      *sqldb.DB
	store   *tick.SQLStore
	tel     *telemetry
	metrics *metrics
	out     *delivery
	fire    *firing // nil without schedules to fire
	ticker  *tick.Ticker
}

// open connects the sinks first — NATS is dialled and its stream checked
// before the database is opened, so bad input records nothing — then
// opens the database and builds the rest on it.
func (r *runner) open(ctx context.Context) error {
	var err error
	if r.senders, err = r.cfg.sinks.senders(r.env); err != nil {
		return err
	}
	if r.senders, err = r.cfg.sinks.withNATS(ctx, r.senders, r.cfg.leaseTTL); err != nil {
		return err
	}
	if r.db, err = r.cfg.db.open(ctx); err != nil {
		return err
	}
	if r.store, err = tick.NewSQLStore(ctx, r.db.DB); err != nil {
		return fmt.Errorf("prepare cursor store in %s: %w", r.cfg.db, err)
	}
	r.logger = slog.New(slog.NewTextHandler(r.env.Stderr, &slog.HandlerOptions{ReplaceAttr: losslessTimes}))
	if r.tel, err = startTelemetry(ctx, r.env, r.logger); err != nil {
		return err
	}
	if r.metrics, err = newMetrics(r.tel.meter()); err != nil {
		return err
	}
	// What the ticker and the scheduler decide goes to the outbox; the
	// relays deliver it after the commit (delivery.go).
	if r.out, err = openDelivery(ctx, r.db, relaying{r.senders, r.cfg.sinks.retries(), r.clock, r.logger},
		startingFrom(r.cfg.from), meteredBy(r.tel.meters)); err != nil {
		return err
	}
	r.out.horizon = newHorizon(r.db, r.cfg.horizonLimit, r.logger)
	r.out.retention = r.cfg.retention
	if err := r.metrics.watchRelays(r.tel.meter(), r.out); err != nil {
		return err
	}
	if err := watchDatabase(r.tel.meter(), r.db, r.clock, r.out); err != nil {
		return err
	}
	return r.newTicker(ctx)
}

// newTicker builds the ticker, publishing into the outbox, or through the
// firing of the schedules when they are fired.
func (r *runner) newTicker(ctx context.Context) error {
	var pub tick.Publisher = r.out
	if r.cfg.schedules {
		// The command's own providers, as the ticker's; the schedules'
		// series without the schedule's name, bounded however many
		// schedules the database holds (schedule.WithMetricsPerSchedule).
		sopts := []schedule.Option{schedule.WithMeterProvider(r.tel.meters), schedule.WithMetricsPerSchedule(false)}
		if r.tel.tracers != nil {
			sopts = append(sopts, schedule.WithTracerProvider(r.tel.tracers))
		}
		var err error
		if r.fire, err = openFiring(ctx, firingOf{db: r.db, units: r.cfg.units, out: r.out, clock: r.clock, logger: r.logger, metrics: r.metrics}, sopts...); err != nil {
			return err
		}
		if r.fire != nil {
			pub = r.fire
		}
	}
	opts := append(r.cfg.opts,
		tick.WithLease(r.cfg.holder, r.cfg.leaseTTL),
		tick.WithObserver(r.leaseLog(r.metrics.observer())),
		tick.WithLogger(r.logger),
		// The command's own providers, not the globals they were just
		// installed as: each command (each parallel test) counts alone.
		tick.WithMeterProvider(r.tel.meters),
	)
	if r.tel.tracers != nil {
		opts = append(opts, tick.WithTracerProvider(r.tel.tracers))
	}
	ticker, err := tick.New(pub, r.store, opts...)
	if errors.Is(err, tick.ErrInvalidOption) {
		return usageError{err}
	}
	r.ticker = ticker
	return err
}

// close closes what open opened, the last first.
func (r *runner) close() {
	if r.tel != nil {
		r.tel.close()
	}
	if r.db != nil {
		_ = r.db.Close()
	}
	closeSenders(r.senders)
}

// leaseLog adds to obs a log line when this replica takes the lease over
// from another (a standby becoming the one that emits and delivers) and
// when it loses it; a first take at start is said by the "running as"
// line already.
func (r *runner) leaseLog(obs tick.Observer) tick.Observer {
	obs.LeaseTaken = func(t tick.LeaseTake) {
		if t.From != "" {
			r.logger.Info("took the lease over: this replica emits and delivers now", "holder", r.cfg.holder, "from", t.From, "term", t.Term)
		}
	}
	obs.LeaseLost = func(l tick.LeaseLoss) {
		r.logger.Warn("lost the lease: standing by while another replica emits and delivers", "holder", r.cfg.holder, "term", l.Term, "error", l.Err)
	}
	return obs
}
