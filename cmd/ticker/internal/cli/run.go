package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"

	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/tick"
)

// stopTimeout bounds how long a stopping ticker may take to finish the
// emission in flight after SIGINT/SIGTERM.
const stopTimeout = 30 * time.Second

type runFlags struct {
	db, units, tz, catchUp, until, httpAddr, holder, secretEnv string
	window, leaseTTL, backoff                                  time.Duration
	max, attempts                                              int
	webhooks                                                   multiFlag
	once, stdout                                               bool
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func runCommand(ctx context.Context, env Env, args []string) error {
	var f runFlags
	fs := newFlagSet(env, "run", "[--db passage.db] [--units minute,hour,day] [--tz UTC] [--once | --until T] [--webhook URL]...")
	fs.StringVar(&f.db, "db", "passage.db", "SQLite file, or a postgres:// DSN for several machines")
	fs.StringVar(&f.units, "units", "minute,hour,day", "comma-separated units to publish")
	fs.StringVar(&f.tz, "tz", "UTC", "IANA time zone boundaries are computed in")
	fs.StringVar(&f.catchUp, "catch-up", "", "per-unit catch-up policy after downtime, e.g. minute=latest,hour=all,day=skip (all, latest or skip; default all)")
	fs.DurationVar(&f.window, "catch-up-window", 7*24*time.Hour, "policy all: emit missed boundaries at most this old")
	fs.IntVar(&f.max, "catch-up-max", 10080, "policy all: emit at most this many missed boundaries per unit")
	fs.Var(&f.webhooks, "webhook", "POST each event as JSON to this http(s) URL (repeatable); replaces stdout unless --stdout")
	fs.StringVar(&f.secretEnv, "webhook-secret-env", "PASSAGE_WEBHOOK_SECRET", "environment variable holding the HMAC-SHA256 secret signing webhook bodies")
	fs.IntVar(&f.attempts, "webhook-attempts", 5, "tries per event before the ticker keeps its cursor and offers the event again at its next wake-up")
	fs.DurationVar(&f.backoff, "webhook-backoff", 200*time.Millisecond, "wait after a failed webhook request, doubled per retry up to 10s")
	fs.BoolVar(&f.stdout, "stdout", false, "also write JSON lines to stdout when --webhook is given")
	fs.BoolVar(&f.once, "once", false, "emit whatever is due up to now, then exit (for an external timer)")
	fs.StringVar(&f.until, "until", "", "backfill every boundary up to this instant (not in the future), then exit")
	fs.StringVar(&f.httpAddr, "http", "", "serve /healthz and /metrics on this address, e.g. 127.0.0.1:9090")
	fs.StringVar(&f.holder, "holder", "", "lease holder id among replicas (default host:pid, or host with --once/--until)")
	fs.DurationVar(&f.leaseTTL, "lease-ttl", 30*time.Second, "how long a dead replica's lease blocks the others")
	if err := parse(fs, args); err != nil {
		return err
	}

	clock := env.clock()
	opts, err := f.tickerOptions(clock)
	if err != nil {
		return err
	}
	var until time.Time
	if f.until != "" {
		if f.once {
			return usagef("--once and --until: choose one")
		}
		loc, _ := loadLocation(f.tz) // already checked by tickerOptions
		if until, err = parseTime("until", f.until, loc); err != nil {
			return err
		}
		if until.After(clock.Now()) {
			return usagef("--until %s is in the future (now is %s)", until.Format(time.RFC3339), clock.Now().In(loc).Format(time.RFC3339))
		}
	}
	if f.httpAddr != "" {
		if _, _, err := net.SplitHostPort(f.httpAddr); err != nil {
			return usagef("--http %q: want host:port, e.g. 127.0.0.1:9090", f.httpAddr)
		}
	}
	pub, err := f.publisher(env)
	if err != nil {
		return err
	}

	db, err := openDB(ctx, f.db)
	if err != nil {
		return err
	}
	defer db.Close()
	store, err := tick.NewSQLStore(ctx, db.DB)
	if err != nil {
		return fmt.Errorf("prepare cursor store in %s: %w", f.db, err)
	}
	metrics := newMetrics()
	opts = append(opts,
		tick.WithLease(f.holderID(), f.leaseTTL),
		tick.WithObserver(metrics.observer()),
		tick.WithLogger(slog.New(slog.NewTextHandler(env.Stderr, nil))),
	)
	ticker, err := tick.New(pub, store, opts...)
	if err != nil {
		return usageError{err}
	}

	switch {
	case f.once:
		return ticker.EmitDue(ctx)
	case !until.IsZero():
		err := ticker.EmitUntil(ctx, until)
		if errors.Is(err, tick.ErrNothingToBackfill) {
			// Running the same backfill twice is harmless: say so, exit 0.
			fmt.Fprintf(env.Stderr, "nothing to backfill up to %s: %v\n", until.Format(time.RFC3339), err)
			return nil
		}
		return err
	}
	return serve(ctx, env, ticker, db.DB, metrics, f.httpAddr, clock)
}

// serve runs the ticker until ctx ends, then stops it gracefully.
func serve(ctx context.Context, env Env, ticker *tick.Ticker, db *sqlx.DB, m *metrics, addr string, clock clockwork.Clock) error {
	var srv *http.Server
	if addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("--http %s: %w", addr, err)
		}
		srv = &http.Server{Handler: m.handler(db, clock), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		fmt.Fprintf(env.Stderr, "serving /healthz and /metrics on http://%s\n", ln.Addr())
	}
	if err := ticker.Start(ctx); err != nil {
		return err
	}
	if env.Started != nil {
		env.Started(ticker)
	}
	<-ctx.Done()

	// The run's context is over; stopping gets a fresh one so the emission
	// in flight can finish and save its cursor.
	stopCtx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	var errs []error
	if err := ticker.Stop(stopCtx); err != nil {
		errs = append(errs, fmt.Errorf("stop ticker: %w", err))
	}
	if srv != nil {
		errs = append(errs, srv.Shutdown(stopCtx))
	}
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
	if f.window <= 0 {
		return nil, usagef("--catch-up-window %s: must be positive", f.window)
	}
	if f.max <= 0 {
		return nil, usagef("--catch-up-max %d: must be positive", f.max)
	}
	if f.attempts <= 0 || f.backoff <= 0 {
		return nil, usagef("--webhook-attempts and --webhook-backoff must be positive")
	}
	if f.leaseTTL <= 0 {
		return nil, usagef("--lease-ttl %s: must be positive", f.leaseTTL)
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

func (f *runFlags) publisher(env Env) (tick.Publisher, error) {
	var sinks []sink.Publisher
	if len(f.webhooks) == 0 || f.stdout {
		sinks = append(sinks, sink.NewJSONLines(env.Stdout))
	}
	secret := env.getenv(f.secretEnv)
	for _, u := range f.webhooks {
		// Backoff runs on the real clock: it paces real HTTP requests.
		hook, err := sink.NewWebhook(sink.WebhookConfig{
			URL: u, Secret: []byte(secret), Attempts: f.attempts,
			InitialBackoff: f.backoff, MaxBackoff: max(f.backoff, 10*time.Second),
		})
		if err != nil {
			return nil, usagef("--webhook %q: %v", u, err)
		}
		sinks = append(sinks, hook)
	}
	if len(f.webhooks) > 0 && secret == "" {
		fmt.Fprintf(env.Stderr, "warning: $%s is empty: webhook bodies are not signed\n", f.secretEnv)
	}
	return sink.NewFanout(sinks...), nil
}

func (f *runFlags) holderID() string {
	if f.holder != "" {
		return f.holder
	}
	host, err := os.Hostname()
	if err != nil {
		host = "ticker"
	}
	if f.once || f.until != "" {
		// A one-shot run under an external timer re-takes its own lease
		// at the next run instead of waiting for the previous one to lapse.
		return host
	}
	return fmt.Sprintf("%s:%d", host, os.Getpid())
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
