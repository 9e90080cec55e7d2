package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/passage-of-time/passage/dashboard"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/tick"
)

// adminTokenEnv is the environment variable holding the dashboard's admin
// token when --admin-token is not given: a flag shows in the process list.
const adminTokenEnv = "PASSAGE_ADMIN_TOKEN"

// Environment variables for the dashboard of "ticker run --http" and
// "ticker serve" (whose flags add to them).
const (
	// allowedHostsEnv lists, comma-separated, the host names the
	// dashboard answers for beside IP addresses and localhost
	// (dashboard.WithAllowedHosts).
	allowedHostsEnv = "PASSAGE_DASHBOARD_HOSTS"
	// secureCookieEnv set to 1 or true marks the session cookie Secure,
	// for a dashboard behind a proxy that ends TLS.
	secureCookieEnv = "PASSAGE_DASHBOARD_SECURE_COOKIE"
)

func adminToken(env Env, flag string) string {
	if flag != "" {
		return flag
	}
	return env.getenv(adminTokenEnv)
}

// openDashboard builds the dashboard of db. With a token, a schedule
// triggered from it is recorded in the outbox with its run, as "ticker
// schedule trigger" records it, and the relays of "ticker run" deliver it
// (within their poll); without one, it only reads.
//
// The host names of $PASSAGE_DASHBOARD_HOSTS and a Secure cookie by
// $PASSAGE_DASHBOARD_SECURE_COOKIE apply to both commands; extra options
// ("ticker serve"'s flags) come after them.
func openDashboard(ctx context.Context, env Env, db *sqldb.DB, clock clockwork.Clock, loc *time.Location, token string, logger *slog.Logger, out *delivery, m *metrics, extra ...dashboard.Option) (*dashboard.Dashboard, error) {
	opts := []dashboard.Option{dashboard.WithClock(clock), dashboard.WithLocation(loc), dashboard.WithAdminToken(token), dashboard.WithLogger(logger)}
	if hosts := splitList(env.getenv(allowedHostsEnv)); len(hosts) > 0 {
		opts = append(opts, dashboard.WithAllowedHosts(hosts...))
	}
	switch strings.ToLower(env.getenv(secureCookieEnv)) {
	case "1", "true", "yes":
		opts = append(opts, dashboard.WithSecureCookie(true))
	}
	if m != nil {
		opts = append(opts, dashboard.WithTickerCounts(m.counts))
	}
	if token != "" && out != nil {
		s, err := schedule.Open(ctx, db.DB, runHandler(out, nil), schedule.WithClock(clock))
		if err != nil {
			return nil, fmt.Errorf("open the schedules for the dashboard: %w", err)
		}
		opts = append(opts, dashboard.WithScheduler(s))
	}
	if err := dashboard.WithAdminToken(token)(new(dashboard.Dashboard)); err != nil {
		return nil, usageError{fmt.Errorf("--admin-token: %w", err)}
	}
	d, err := dashboard.New(db.DB, append(opts, extra...)...)
	if errors.Is(err, dashboard.ErrInvalidOption) {
		// The token was checked above: what is left are host names.
		return nil, usageError{fmt.Errorf("--allowed-host or $%s: %w", allowedHostsEnv, err)}
	}
	return d, err
}

// splitList splits a comma-separated list, dropping empty entries.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// loopback reports whether addr, a listener's address, is reachable from
// this machine alone.
func loopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// counts is what the ticker's observer counted, per unit, for the
// dashboard's tickers page.
func (m *metrics) counts() map[tick.Unit]dashboard.TickerCounts {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[tick.Unit]dashboard.TickerCounts{}
	for _, u := range tick.Units() {
		if m.emitted[u]+m.skipped[u]+m.failures[u] > 0 {
			out[u] = dashboard.TickerCounts{Emitted: m.emitted[u], Skipped: m.skipped[u], PublishFailures: m.failures[u]}
		}
	}
	return out
}

// serveCommand is "ticker serve": the dashboard alone, no ticker. Without
// an admin token the database is opened read-only (openLiveReadOnly):
// nothing is written, migrated or locked, and every write other processes
// commit shows at the next refresh. With one, a schedule triggered
// from it is recorded in the outbox, and "ticker run" delivers it.
func serveCommand(ctx context.Context, env Env, args []string) error {
	var f runFlags
	fs := newFlagSet(env, "serve", "--http ADDR [--db passage.db] [--tz UTC] [--admin-token TOKEN]")
	dsn := fs.String("db", "passage.db", "SQLite file or postgres:// DSN to show; opened read-only unless an admin token is given")
	addr := fs.String("http", "", "serve the dashboard, /healthz and /metrics on this address, e.g. 127.0.0.1:9090 (required)")
	tz := fs.String("tz", "UTC", "IANA time zone to show times and compute the ticker's boundaries in: the --tz \"ticker run\" uses")
	fs.StringVar(&f.adminToken, "admin-token", "", "allow the dashboard's actions to whoever logs in with this token, 16 bytes or more (default $"+adminTokenEnv+"; without one it is read-only); a triggered run is recorded in the outbox and delivered by \"ticker run\"")
	var hosts multiFlag
	fs.Var(&hosts, "allowed-host", "a host name the dashboard answers for, beside IP addresses and localhost (repeat it; also $"+allowedHostsEnv+", comma-separated): the name it is reached by, or the Host a proxy forwards; others are refused against DNS rebinding")
	secure := fs.Bool("secure-cookie", false, "mark the session cookie Secure, behind a proxy that ends TLS (also $"+secureCookieEnv+"=1)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkHTTPAddr(*addr); err != nil {
		return err
	}
	loc, err := loadLocation(*tz)
	if err != nil {
		return err
	}
	token := adminToken(env, f.adminToken)
	var db *sqldb.DB
	if token == "" {
		db, err = openLiveReadOnly(ctx, *dsn)
	} else {
		db, err = openDB(ctx, *dsn)
	}
	if err != nil {
		return err
	}
	defer db.Close()
	logger := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{ReplaceAttr: losslessTimes}))
	var out *delivery
	if token != "" {
		// The outbox alone, no relay: "ticker run" delivers.
		if out, err = openDelivery(ctx, db, nil, time.Second, 1, env.clock(), logger); err != nil {
			return err
		}
	}
	tel, err := startTelemetry(ctx, env, logger)
	if err != nil {
		return err
	}
	defer tel.close()
	// The to-do lists (and with them the schedules' next slots), read
	// from the database; no ticker or relay runs here to count more.
	if err := watchDatabase(tel.meter(), db, env.clock(), nil); err != nil {
		return err
	}
	var extra []dashboard.Option
	for _, h := range hosts {
		extra = append(extra, dashboard.WithAllowedHosts(splitList(h)...))
	}
	if *secure {
		extra = append(extra, dashboard.WithSecureCookie(true))
	}
	if token != "" {
		// No relay runs here: say where a triggered run went.
		extra = append(extra, dashboard.WithTriggerNote(`, recorded in the outbox: "ticker run" on this database delivers it`))
	}
	dash, err := openDashboard(ctx, env, db, env.clock(), loc, token, logger, out, nil, extra...)
	if err != nil {
		return err
	}
	dash.Start(ctx)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("--http %s: %w", *addr, err)
	}
	mux := http.NewServeMux()
	obs := observability(serveHealth(db), tel)
	mux.Handle("/healthz", obs)
	mux.Handle("/metrics", obs)
	mux.Handle("/", dash)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	mode := "read-only"
	if token != "" {
		mode = "actions allowed with the admin token"
	}
	if !loopback(ln.Addr()) {
		// Reading needs no token, with one or without: say so where it
		// matters, when other machines can reach the server. Before the
		// serving line, which tells a watcher the server is up.
		fmt.Fprintf(env.Stderr, "warning: %s is reachable from other machines and reading the dashboard needs no token: whoever reaches it reads every page and the API (workflow inputs, signal payloads, errors). Bind to 127.0.0.1, or put it behind a proxy that authenticates (see docs/dashboard/security.md).\n", ln.Addr())
	}
	fmt.Fprintf(env.Stderr, "serving the dashboard on http://%s (%s), /healthz and /metrics beside it\n", ln.Addr(), mode)
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	return errors.Join(srv.Shutdown(stopCtx), dash.Stop(stopCtx))
}
