package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/passage-of-time/passage/dashboard"
	"github.com/passage-of-time/passage/internal/sqldb"
)

// serveConfig is "ticker serve" validated.
type serveConfig struct {
	db     database
	addr   string
	loc    *time.Location
	token  string
	hosts  []string // --allowed-host, each possibly comma-separated
	secure bool     // --secure-cookie
	// horizonLimit is --horizon-limit (horizon.go).
	horizonLimit time.Duration
}

// serveCommand is "ticker serve": the dashboard alone, no ticker. Without
// an admin token the database is opened read-only (database.liveReadOnly):
// nothing is written, migrated or locked, and every write other processes
// commit shows at the next refresh. With one, a schedule triggered
// from it is recorded in the outbox, and "ticker run" delivers it.
func serveCommand(env Env) *cobra.Command {
	c := &cobra.Command{
		Use:   "serve --http ADDR [--db passage.db] [--tz UTC] [--admin-token TOKEN]",
		Short: "serve the dashboard alone (no ticker): read-only unless given an admin token",
		Args:  noArgs,
	}
	fs := c.Flags()
	dbf := addDB(c, env, "SQLite file or postgres:// DSN to show; opened read-only unless an admin token is given")
	addr := fs.String("http", "", "serve the dashboard, /healthz and /metrics on this address, e.g. 127.0.0.1:9090 (required)")
	tz := addTZ(c, "IANA time zone to show times and compute the ticker's boundaries in: the --tz \"ticker run\" uses")
	token := fs.String("admin-token", "", "allow the dashboard's actions to whoever logs in with this token, 16 bytes or more (default $"+adminTokenEnv+"; without one it is read-only); a triggered run is recorded in the outbox and delivered by \"ticker run\"")
	var hosts multiFlag
	fs.Var(&hosts, "allowed-host", "a `host` name the dashboard answers for, beside IP addresses and localhost (repeat it; also $"+allowedHostsEnv+", comma-separated): the name it is reached by, or the Host a proxy forwards; others are refused against DNS rebinding")
	secure := fs.Bool("secure-cookie", false, "mark the session cookie Secure, behind a proxy that ends TLS (also $"+secureCookieEnv+"=1)")
	horizonLimit := addHorizonLimit(c)
	c.RunE = func(c *cobra.Command, _ []string) error {
		if !c.Flags().Changed("http") {
			// The dashboard is all serve does: with no address there is
			// nothing to run, and "--http \"\"" would not say so.
			return usagef("--http is required: the address to serve the dashboard on, e.g. --http 127.0.0.1:9090")
		}
		if err := checkHTTPAddr(*addr); err != nil {
			return err
		}
		if err := checkHorizonLimit(*horizonLimit); err != nil {
			return err
		}
		cfg := serveConfig{addr: *addr, token: adminToken(env, *token), hosts: hosts, secure: *secure, horizonLimit: *horizonLimit}
		var err error
		if cfg.loc, err = tz.location(); err != nil {
			return err
		}
		if cfg.db, err = dbf.database(); err != nil {
			return err
		}
		return serve(c.Context(), env, cfg)
	}
	return c
}

// serve serves the dashboard of cfg.db until ctx ends.
func serve(ctx context.Context, env Env, cfg serveConfig) error {
	var db *sqldb.DB
	var err error
	if cfg.token == "" {
		db, err = cfg.db.liveReadOnly(ctx)
	} else {
		db, err = cfg.db.open(ctx)
	}
	if err != nil {
		return err
	}
	defer db.Close()
	logger := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{ReplaceAttr: losslessTimes}))
	var out *delivery
	if cfg.token != "" {
		// The outbox alone, no relay: "ticker run" delivers.
		if out, err = openDelivery(ctx, db, relaying{nil, retries{time.Second, 1}, env.clock(), logger}); err != nil {
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
	// A PostgreSQL transaction holding every relay back, named on
	// /healthz, in the log and on /metrics here too.
	horizon := newHorizon(db, cfg.horizonLimit, logger)
	if err := horizon.register(tel.meter()); err != nil {
		return err
	}
	dash, err := openDashboard(ctx, env, dashboardOf{db: db, clock: env.clock(), loc: cfg.loc, token: cfg.token, logger: logger, out: out}, cfg.options()...)
	if err != nil {
		return err
	}
	dash.Start(ctx)
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("--http %s: %w", cfg.addr, err)
	}
	srv := serveHTTP(ln, observability(serveHealth(db, horizon), tel), dash)
	announce(env, ln.Addr(), cfg.token != "")
	watched := make(chan struct{})
	go func() { defer close(watched); horizon.watch(ctx, nil) }()
	<-ctx.Done()
	<-watched
	stopCtx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	return errors.Join(srv.Shutdown(stopCtx), dash.Stop(stopCtx))
}

// options are the dashboard options of serve's own flags.
func (cfg serveConfig) options() []dashboard.Option {
	var extra []dashboard.Option
	for _, h := range cfg.hosts {
		extra = append(extra, dashboard.WithAllowedHosts(splitList(h)...))
	}
	if cfg.secure {
		extra = append(extra, dashboard.WithSecureCookie(true))
	}
	if cfg.token != "" {
		// No relay runs here: say where a triggered run went.
		extra = append(extra, dashboard.WithTriggerNote(`, recorded in the outbox: "ticker run" on this database delivers it`))
	}
	return extra
}

// announce says the server is up, and warns first when other machines
// can reach it.
func announce(env Env, addr net.Addr, actions bool) {
	mode := "read-only"
	if actions {
		mode = "actions allowed with the admin token"
	}
	if !loopback(addr) {
		// Reading needs no token, with one or without: say so where it
		// matters, when other machines can reach the server. Before the
		// serving line, which tells a watcher the server is up.
		fmt.Fprintf(env.Stderr, "warning: %s is reachable from other machines and reading the dashboard needs no token: whoever reaches it reads every page and the API (workflow inputs, signal payloads, errors). Bind to 127.0.0.1, or put it behind a proxy that authenticates (see docs/dashboard/security.md).\n", addr)
	}
	fmt.Fprintf(env.Stderr, "serving the dashboard on http://%s (%s), /healthz and /metrics beside it\n", addr, mode)
}
