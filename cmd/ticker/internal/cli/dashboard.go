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
func openDashboard(ctx context.Context, env Env, db *sqldb.DB, clock clockwork.Clock, loc *time.Location, token string, logger *slog.Logger, out *delivery, m *metrics) (*dashboard.Dashboard, error) {
	opts := []dashboard.Option{dashboard.WithClock(clock), dashboard.WithLocation(loc), dashboard.WithAdminToken(token), dashboard.WithLogger(logger)}
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
	d, err := dashboard.New(db.DB, opts...)
	if errors.Is(err, dashboard.ErrInvalidOption) {
		return nil, usageError{fmt.Errorf("--admin-token: %w", err)}
	}
	return d, err
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
	addr := fs.String("http", "", "serve the dashboard on this address, e.g. 127.0.0.1:9090 (required)")
	tz := fs.String("tz", "UTC", "IANA time zone to show times and compute the ticker's boundaries in: the --tz \"ticker run\" uses")
	fs.StringVar(&f.adminToken, "admin-token", "", "allow the dashboard's actions to whoever logs in with this token, 16 bytes or more (default $"+adminTokenEnv+"; without one it is read-only); a triggered run is recorded in the outbox and delivered by \"ticker run\"")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *addr == "" || !strings.Contains(*addr, ":") {
		return usagef("--http %q: want host:port, e.g. 127.0.0.1:9090", *addr)
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
	dash, err := openDashboard(ctx, env, db, env.clock(), loc, token, logger, out, nil)
	if err != nil {
		return err
	}
	dash.Start(ctx)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("--http %s: %w", *addr, err)
	}
	srv := &http.Server{Handler: dash, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	mode := "read-only"
	if token != "" {
		mode = "actions allowed with the admin token"
	}
	fmt.Fprintf(env.Stderr, "serving the dashboard on http://%s (%s)\n", ln.Addr(), mode)
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	return errors.Join(srv.Shutdown(stopCtx), dash.Stop(stopCtx))
}
