package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/timefmt"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/tick"
)

// stopTimeout bounds how long a stopping ticker may take to finish the
// emission in flight after SIGINT/SIGTERM.
const stopTimeout = 30 * time.Second

type runFlags struct {
	db, units, tz, catchUp, until, httpAddr, holder, secretEnv string
	adminToken                                                 string
	window, leaseTTL, backoff                                  time.Duration
	max, attempts                                              int
	webhooks                                                   multiFlag
	nats                                                       natsFlags
	once, stdout, schedules                                    bool

	fs *flagSet // the flags' set, for given (kept by sinkFlags)
}

// given reports whether the flag name was set on the command line (its
// value may still equal the default: --webhook-attempts 360 was given).
func (f *runFlags) given(name string) bool {
	set := false
	f.fs.Visit(func(fl *flag.Flag) { set = set || fl.Name == name })
	return set
}

func runCommand(ctx context.Context, env Env, args []string) error {
	var f runFlags
	fs := newFlagSet(env, "run", "[--db passage.db] [--units minute,hour,day] [--tz UTC] [--once | --until T] [--webhook URL]... [--nats URL]")
	fs.StringVar(&f.db, "db", "passage.db", "SQLite file, or a postgres:// DSN for several machines")
	fs.StringVar(&f.units, "units", "minute,hour,day", "comma-separated units to publish")
	fs.StringVar(&f.tz, "tz", "UTC", "IANA time zone boundaries are computed in")
	fs.StringVar(&f.catchUp, "catch-up", "", "per-unit catch-up policy after downtime, e.g. minute=latest,hour=all,day=skip (all, latest or skip; default all)")
	fs.DurationVar(&f.window, "catch-up-window", 7*24*time.Hour, fmt.Sprintf("policy all: emit missed boundaries at most this old (%s to %s)", bounds["catch-up-window"].min, bounds["catch-up-window"].max))
	fs.IntVar(&f.max, "catch-up-max", 10080, fmt.Sprintf("policy all: emit at most this many missed boundaries per unit (1 to %d)", maxCatchUpMax))
	f.sinkFlags(fs)
	f.declareNATS(fs)
	fs.BoolVar(&f.once, "once", false, "emit whatever is due up to now, release the lease, print one line of what was done on stderr, and exit (for an external timer)")
	fs.StringVar(&f.until, "until", "", "backfill every boundary up to this time (not in the future; behind every cursor is a no-op, said so), release the lease and exit; "+timeRule)
	fs.StringVar(&f.httpAddr, "http", "", "serve /healthz, /metrics and the dashboard on this address, e.g. 127.0.0.1:9090 (not with --once or --until)")
	fs.StringVar(&f.adminToken, "admin-token", "", "allow the dashboard's actions (pause, trigger, signal, re-activate…) to whoever logs in with this token, 16 bytes or more (default $"+adminTokenEnv+"; without one the dashboard is read-only)")
	fs.StringVar(&f.holder, "holder", "", "lease holder id among replicas (default host:pid:random, unique per process)")
	fs.BoolVar(&f.schedules, "schedules", true, "fire the schedules stored in --db (\"ticker schedule add\") on minute boundaries, each run recorded with its firing and delivered as a ScheduleRun record through the same sinks; needs minute in --units when there are any; not with --until")
	fs.DurationVar(&f.leaseTTL, "lease-ttl", 30*time.Second, fmt.Sprintf("how long a dead replica's lease blocks the others (%s to %s)", bounds["lease-ttl"].min, bounds["lease-ttl"].max))
	if err := parse(fs, args); err != nil {
		return err
	}

	clock := env.clock()
	opts, err := f.tickerOptions(clock)
	if err != nil {
		return err
	}
	backfill := f.until != ""
	var until time.Time
	if backfill {
		if f.once {
			return usagef("--once and --until %q: choose one", f.until)
		}
		loc, _ := loadLocation(f.tz) // already checked by tickerOptions
		if until, err = parseTime("until", f.until, loc); err != nil {
			return err
		}
		// Cursors are stored as nanoseconds since 1970 in an int64; an
		// --until outside those years (0001-01-01 is the zero time) is
		// behind or beyond anything a ticker can have recorded.
		if until.Before(minStorable) || until.After(maxStorable) {
			return usagef("--until %q: outside the years a cursor can hold (%d to %d)", f.until, minStorable.Year(), maxStorable.Year())
		}
		if until.After(clock.Now()) {
			return usagef("--until %s is in the future (now is %s)", timefmt.Format(until), timefmt.Format(clock.Now().In(loc)))
		}
	}
	if f.httpAddr != "" {
		if f.once || backfill {
			return usagef("--http %q: serves only while \"ticker run\" keeps running, not with --once or --until", f.httpAddr)
		}
		if err := checkHTTPAddr(f.httpAddr); err != nil {
			return err
		}
	}
	if err := f.checkIgnored(); err != nil {
		return err
	}
	senders, err := f.senders(env)
	if err != nil {
		return err
	}
	if senders, err = f.withNATS(ctx, senders); err != nil {
		return err
	}
	defer closeSenders(senders)

	db, err := openDB(ctx, f.db)
	if err != nil {
		return err
	}
	defer db.Close()
	store, err := tick.NewSQLStore(ctx, db.DB)
	if err != nil {
		return fmt.Errorf("prepare cursor store in %s: %w", redact(f.db), err)
	}
	holder := f.holder
	if holder == "" {
		holder = tick.NewHolderID()
	}
	logger := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{ReplaceAttr: losslessTimes}))
	tel, err := startTelemetry(ctx, env, logger)
	if err != nil {
		return err
	}
	defer tel.close()
	metrics, err := newMetrics(tel.meter())
	if err != nil {
		return err
	}
	opts = append(opts,
		tick.WithLease(holder, f.leaseTTL),
		tick.WithObserver(metrics.observer()),
		tick.WithLogger(logger),
		// The command's own providers, not the globals they were just
		// installed as: each command (each parallel test) counts alone.
		tick.WithMeterProvider(tel.meters),
	)
	if tel.tracers != nil {
		opts = append(opts, tick.WithTracerProvider(tel.tracers))
	}
	// What the ticker and the scheduler decide goes to the outbox; the
	// relays deliver it after the commit (delivery.go).
	out, err := openDelivery(ctx, db, senders, f.backoff, f.attempts, clock, logger)
	if err != nil {
		return err
	}
	if err := metrics.watchRelays(tel.meter(), out); err != nil {
		return err
	}
	if err := watchDatabase(tel.meter(), db, clock, out); err != nil {
		return err
	}
	var pub tick.Publisher = out
	// A backfill re-emits past boundaries for their receivers; schedules
	// have catch-up policies of their own and are not fired by it.
	var fire *firing
	if f.schedules && !backfill {
		units, _ := parseUnits(f.units) // already checked by tickerOptions
		// The command's own providers, as the ticker's; the schedules'
		// series without the schedule's name, bounded however many
		// schedules the database holds (schedule.WithMetricsPerSchedule).
		sopts := []schedule.Option{schedule.WithMeterProvider(tel.meters), schedule.WithMetricsPerSchedule(false)}
		if tel.tracers != nil {
			sopts = append(sopts, schedule.WithTracerProvider(tel.tracers))
		}
		if fire, err = openFiring(ctx, db, units, out, clock, logger, metrics, sopts...); err != nil {
			return err
		}
		if fire != nil {
			pub = fire
		}
	}
	ticker, err := tick.New(pub, store, opts...)
	if errors.Is(err, tick.ErrInvalidOption) {
		return usageError{err}
	}
	if err != nil {
		return err
	}

	switch {
	case f.once:
		loc, _ := loadLocation(f.tz) // already checked by tickerOptions
		return once(ctx, env, ticker, store, metrics, loc, fire, out, clock)
	case backfill:
		err := ticker.EmitUntil(ctx, until)
		if ctx.Err() != nil && err != nil && !errors.Is(err, tick.ErrNothingToBackfill) {
			// A signal before --until was reached: what was recorded stays
			// in the outbox, for the next run to deliver.
			return interrupted(ctx, env, ticker, store, out, fmt.Sprintf("stopped by a signal before --until %s", timefmt.Format(until)))
		}
		var dr drained
		if err == nil {
			// Delivered while the lease is held: another replica's relay
			// would deliver the same records beside this one.
			dr = out.drain(ctx, env.drainTimeout())
			err = dr.err()
		}
		err = errors.Join(err, releaseLease(ctx, ticker))
		if errors.Is(err, tick.ErrNothingToBackfill) {
			// Running the same backfill twice is harmless: say so, exit 0.
			fmt.Fprintf(env.Stderr, "nothing to backfill up to %s: %v\n", timefmt.Format(until), err)
			return nil
		}
		if err == nil {
			fmt.Fprintf(env.Stderr, "backfilled up to %s: %s\n", timefmt.Format(until), dr.summary())
		}
		return err
	}
	var dash http.Handler
	if f.httpAddr != "" {
		loc, _ := loadLocation(f.tz) // already checked by tickerOptions
		d, err := openDashboard(ctx, env, db, clock, loc, adminToken(env, f.adminToken), logger, out, metrics)
		if err != nil {
			return err
		}
		d.Start(ctx) // the lag chart's samples; ends with ctx
		dash = d
	}
	loc, _ := loadLocation(f.tz) // already checked by tickerOptions
	sinks := make([]string, len(out.relays))
	for i, rl := range out.relays {
		sinks[i] = rl.name
	}
	started := fmt.Sprintf("running as %s: units %s in %s, delivering to %s, while this process holds the lease (SIGINT or SIGTERM stops it within %s)",
		holder, f.units, loc, strings.Join(sinks, " and "), env.stopTimeout())
	return serve(ctx, env, ticker, store, db, out, tel, f.httpAddr, dash, started, loc)
}

// interrupted ends "run --once" or "run --until" stopped by a signal
// before its work was done: the lease is released, what was recorded
// stays in the outbox (the next run delivers it), and one line says
// where the cursors are.
func interrupted(ctx context.Context, env Env, ticker *tick.Ticker, store *tick.SQLStore, out *delivery, what string) error {
	line := what
	if err := releaseLease(ctx, ticker); err != nil {
		line += fmt.Sprintf("; %v (it lapses after --lease-ttl)", err)
	} else {
		line += "; lease released"
	}
	line += "; " + out.leftover(ctx) + "; " + cursorsLine(ctx, store, time.UTC)
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

// checkHTTPAddr checks an --http address: host:port with a port that
// exists (0 to 65535; 0 picks a free one). "ticker serve" has the same
// flag and the same rule.
func checkHTTPAddr(addr string) error {
	if _, err := net.ResolveTCPAddr("tcp", addr); err != nil || !strings.Contains(addr, ":") {
		return usagef("--http %q: want host:port with a port from 0 to 65535, e.g. 127.0.0.1:9090", addr)
	}
	return nil
}

// checkIgnored refuses a flag given on the command line that this run
// would not use: a setting silently ignored is a mistake the operator
// does not see.
func (f *runFlags) checkIgnored() error {
	if f.given("admin-token") {
		if f.once || f.until != "" {
			return usagef("--admin-token: allows the dashboard's actions, and the dashboard is served only while \"ticker run\" keeps running with --http, not with --once or --until")
		}
		if f.httpAddr == "" {
			return usagef("--admin-token: allows the dashboard's actions, and the dashboard is served only with --http")
		}
	}
	if f.until != "" && f.schedules && f.given("schedules") {
		return usagef("--schedules: a backfill (--until) re-emits boundaries only; schedules are not fired by it (ticker schedule backfill runs their past slots)")
	}
	policies, _ := parseCatchUp(f.catchUp, mustUnits(f.units), tick.All{})
	all := false
	for _, p := range policies {
		if _, ok := p.(tick.All); ok {
			all = true
		}
	}
	if !all {
		for _, name := range []string{"catch-up-window", "catch-up-max"} {
			if f.given(name) {
				return usagef("--%s: bounds the catch-up policy all, which --catch-up %q gives no unit", name, f.catchUp)
			}
		}
	}
	return nil
}

// mustUnits is parseUnits of a list already checked.
func mustUnits(list string) []tick.Unit {
	units, _ := parseUnits(list)
	return units
}

// The years sqldb.EncodeTime stores exactly.
var (
	minStorable = time.Unix(0, math.MinInt64).UTC()
	maxStorable = time.Unix(0, math.MaxInt64).UTC()
)

// once is "run --once": one pass, the outbox drained while the lease is
// held, the lease released so that a timer on another host can emit a
// moment later, and one line on stderr saying what was done (stdout
// carries only events). With schedules, it also fires what is due by now,
// not only by the last minute boundary: a timer that runs it at 12:00:40
// fires a 12:00:30 slot then, not at the next run. What a sink refused is
// left in the outbox, for the next run to retry.
func once(ctx context.Context, env Env, ticker *tick.Ticker, store *tick.SQLStore, m *metrics, loc *time.Location, fire *firing, out *delivery, clock clockwork.Clock) error {
	before, err := store.Cursors(ctx)
	if err != nil {
		return fmt.Errorf("read cursors: %w", err)
	}
	err = ticker.EmitDue(ctx)
	if err == nil && fire != nil {
		err = fire.process(ctx, clock.Now())
	}
	if ctx.Err() != nil && err != nil {
		return interrupted(ctx, env, ticker, store, out, "once: stopped by a signal before its pass was done")
	}
	var dr drained
	if err == nil {
		dr = out.drain(ctx, env.drainTimeout())
		err = dr.err()
	}
	released := releaseLease(ctx, ticker)
	if err := errors.Join(err, released); err != nil {
		return err
	}
	after, err := store.Cursors(ctx)
	if err != nil {
		return fmt.Errorf("read cursors: %w", err)
	}
	line := m.summary(before, after, loc)
	if fire != nil {
		if n := fire.runs.Load(); n > 0 {
			noun := "runs"
			if n == 1 {
				noun = "run"
			}
			line += fmt.Sprintf("; fired %d schedule %s", n, noun)
		}
	}
	fmt.Fprintln(env.Stderr, line+"; "+dr.summary())
	return nil
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

// losslessTimes prints the times in log records with timefmt.Format:
// slog's own format drops an offset's seconds.
func losslessTimes(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindTime {
		return slog.String(a.Key, timefmt.Format(a.Value.Time()))
	}
	return a
}

// serve runs the ticker and the relays until ctx ends, then stops within
// the stop bound (stopTimeout): the ticker finishes its pass in flight,
// the relays the requests in flight (a webhook's answer, or its 10 s
// timeout), and then, if this process held the lease, it delivers what
// is left. What the bound cuts short stays in the outbox for the next
// holder; the lease is released either way, and a line on stderr says
// where the cursors are and how many records were left. A stop cut short
// by its bound is not a failure: nothing is lost.
func serve(ctx context.Context, env Env, ticker *tick.Ticker, store *tick.SQLStore, db *sqldb.DB, out *delivery, tel *telemetry, addr string, dash http.Handler, started string, loc *time.Location) error {
	var srv *http.Server
	if addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("--http %s: %w", addr, err)
		}
		mux := http.NewServeMux()
		obs := observability(runHealth(ticker, db, out), tel)
		mux.Handle("/healthz", obs)
		mux.Handle("/metrics", obs)
		mux.Handle("/", dash)
		srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		fmt.Fprintf(env.Stderr, "serving /healthz, /metrics and the dashboard on http://%s\n", ln.Addr())
	}
	if err := ticker.Start(ctx); err != nil {
		return err
	}
	relayCtx, stopRelays := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRelays()
	stopping, relaysDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(relaysDone)
		out.run(relayCtx, stopping, ticker.HoldsLease)
	}()
	fmt.Fprintln(env.Stderr, started)
	if env.Started != nil {
		env.Started(ticker)
	}
	<-ctx.Done()
	held := ticker.HoldsLease()
	bound := env.stopTimeout()
	fmt.Fprintf(env.Stderr, "stopping: finishing the pass and the deliveries in flight, then delivering what is recorded (at most %s)\n", bound)

	// The run's context is over; stopping gets a fresh one so the emission
	// in flight can finish and save its cursor.
	stopCtx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	var errs []error
	var notes []string
	if err := ticker.Stop(stopCtx); err != nil {
		if stopCtx.Err() == nil {
			errs = append(errs, fmt.Errorf("stop ticker: %w", err))
		}
		notes = append(notes, fmt.Sprintf("the pass in flight was abandoned at the %s bound", bound))
	}
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
	var dr drained
	if held {
		// The last records of this holder, delivered before exiting; a
		// new holder may deliver some of them again (at least once).
		dr = out.drain(stopCtx, env.drainTimeout())
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
	if err := releaseLeaseWithin(ctx, ticker, time.Second); err != nil {
		lease = fmt.Sprintf("%v: it lapses after --lease-ttl", err)
	}
	line := "stopped; " + cursorsLine(ctx, store, loc) + "; " + lease
	if held {
		line += "; " + dr.summary()
	} else if left := out.leftover(ctx); left != "" {
		line += "; " + left
	}
	for _, n := range notes {
		line += "; " + n
	}
	fmt.Fprintln(env.Stderr, line)
	return errors.Join(errs...)
}

func (f *runFlags) tickerOptions(clock clockwork.Clock) ([]tick.Option, error) {
	loc, err := loadLocation(f.tz)
	if err != nil {
		return nil, err
	}
	units, err := parseUnits(f.units)
	if err != nil {
		return nil, err
	}
	for _, d := range []struct {
		name  string
		value time.Duration
	}{{"catch-up-window", f.window}, {"lease-ttl", f.leaseTTL}, {"webhook-backoff", f.backoff}} {
		if b := bounds[d.name]; d.value < b.min || d.value > b.max {
			return nil, usagef("--%s %s: must be between %s and %s (%s)", d.name, d.value, b.min, b.max, b.why)
		}
	}
	if f.max < 1 || f.max > maxCatchUpMax {
		return nil, usagef("--catch-up-max %d: must be between 1 and %d", f.max, maxCatchUpMax)
	}
	if err := f.checkSinkFlags(); err != nil {
		return nil, err
	}
	if err := f.checkNATS(); err != nil {
		return nil, err
	}
	opts := []tick.Option{tick.WithClock(clock), tick.WithLocation(loc), tick.WithUnits(units...)}
	policies, err := parseCatchUp(f.catchUp, units, tick.All{Window: f.window, Max: f.max})
	if err != nil {
		return nil, err
	}
	for _, u := range units {
		opts = append(opts, tick.WithCatchUp(u, policies[u]))
	}
	return opts, nil
}

func parseUnits(list string) ([]tick.Unit, error) {
	var units []tick.Unit
	seen := map[tick.Unit]bool{}
	for name := range strings.SplitSeq(list, ",") {
		u, err := tick.ParseUnit(name)
		if err != nil {
			return nil, usagef("--units: %q is not a unit (minute, hour, day, week, month, quarter, year)", strings.TrimSpace(name))
		}
		if !seen[u] {
			seen[u] = true
			units = append(units, u)
		}
	}
	return units, nil
}

func parseCatchUp(spec string, units []tick.Unit, all tick.All) (map[tick.Unit]tick.CatchUp, error) {
	policies := map[tick.Unit]tick.CatchUp{}
	for _, u := range units {
		policies[u] = all
	}
	if strings.TrimSpace(spec) == "" {
		return policies, nil
	}
	for pair := range strings.SplitSeq(spec, ",") {
		name, policy, ok := strings.Cut(pair, "=")
		if !ok {
			return nil, usagef("--catch-up %q: want unit=policy, e.g. minute=latest", pair)
		}
		u, err := tick.ParseUnit(name)
		if err != nil {
			return nil, usagef("--catch-up %q: %q is not a unit", pair, name)
		}
		if _, ok := policies[u]; !ok {
			return nil, usagef("--catch-up %q: unit %s is not in --units", pair, u)
		}
		switch strings.ToLower(strings.TrimSpace(policy)) {
		case "all":
			policies[u] = all
		case "latest", "latest-only", "latestonly":
			policies[u] = tick.LatestOnly{}
		case "skip":
			policies[u] = tick.Skip{}
		default:
			return nil, usagef("--catch-up %q: policy %q is not all, latest or skip", pair, policy)
		}
	}
	return policies, nil
}

// sinkFlags declares where events go: stdout, or webhooks. "run" and
// "schedule trigger" share them.
func (f *runFlags) sinkFlags(fs *flagSet) {
	f.fs = fs
	fs.Var(&f.webhooks, "webhook", "POST each event as JSON to this http(s) URL (repeatable); replaces stdout unless --stdout")
	fs.StringVar(&f.secretEnv, "webhook-secret-env", "PASSAGE_WEBHOOK_SECRET", "environment variable holding the HMAC-SHA256 secret signing webhook bodies")
	fs.IntVar(&f.attempts, "webhook-attempts", 360, fmt.Sprintf("deliveries of one record a sink may refuse before the record is parked (listed, never dropped; its stream goes on); each delivery is one request; about an hour of refusals at the default backoff (1 to %d)", maxWebhookAttempts))
	fs.DurationVar(&f.backoff, "webhook-backoff", 200*time.Millisecond, fmt.Sprintf("wait after a refused delivery before the record is tried again, doubled per refusal up to 10s (%s to %s)", bounds["webhook-backoff"].min, bounds["webhook-backoff"].max))
	fs.BoolVar(&f.stdout, "stdout", false, "also write JSON lines to stdout when --webhook is given")
}

// checkSinkFlags checks the webhook flags' bounds (for "schedule
// trigger"; "run" checks them with the rest in tickerOptions), and
// refuses the flags that only shape webhooks when there is none.
func (f *runFlags) checkSinkFlags() error {
	if b := bounds["webhook-backoff"]; f.backoff < b.min || f.backoff > b.max {
		return usagef("--webhook-backoff %s: must be between %s and %s (%s)", f.backoff, b.min, b.max, b.why)
	}
	if f.attempts < 1 || f.attempts > maxWebhookAttempts {
		return usagef("--webhook-attempts %d: must be between 1 and %d", f.attempts, maxWebhookAttempts)
	}
	if len(f.webhooks) > 0 || f.nats.url != "" {
		return nil
	}
	for _, name := range []string{"webhook-attempts", "webhook-backoff", "webhook-secret-env", "stdout"} {
		if !f.given(name) {
			continue
		}
		if name == "stdout" {
			return usagef("--stdout: keeps stdout beside --webhook; without a --webhook, events go to stdout anyway")
		}
		return usagef("--%s: shapes the delivery to webhooks, and no --webhook is given", name)
	}
	return nil
}

func openDB(ctx context.Context, dsn string) (*sqldb.DB, error) {
	db, err := sqldb.Open(ctx, dsn)
	if errors.Is(err, sqldb.ErrBadDSN) {
		return nil, usagef("--db: %v", err)
	}
	if err != nil {
		return nil, fmt.Errorf("--db: %w", err)
	}
	return db, nil
}
