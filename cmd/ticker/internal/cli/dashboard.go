package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
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

// dashboardOf is what a dashboard is built on: its database and clock,
// the zone its times are shown in, the admin token ("" for read-only),
// the logger of its actions, the outbox a triggered run is recorded in
// (nil: none) and the ticker's figures (nil: no ticker here).
type dashboardOf struct {
	db      *sqldb.DB
	clock   clockwork.Clock
	loc     *time.Location
	token   string
	logger  *slog.Logger
	out     *delivery
	metrics *metrics
}

// openDashboard builds the dashboard of o.db. With a token, a schedule
// triggered from it is recorded in the outbox with its run, as "ticker
// schedule trigger" records it, and the relays of "ticker run" deliver it
// (within their poll); without one, it only reads.
//
// The host names of $PASSAGE_DASHBOARD_HOSTS and a Secure cookie by
// $PASSAGE_DASHBOARD_SECURE_COOKIE apply to both commands; extra options
// ("ticker serve"'s flags) come after them.
func openDashboard(ctx context.Context, env Env, o dashboardOf, extra ...dashboard.Option) (*dashboard.Dashboard, error) {
	opts := []dashboard.Option{dashboard.WithClock(o.clock), dashboard.WithLocation(o.loc), dashboard.WithAdminToken(o.token), dashboard.WithLogger(o.logger)}
	if hosts := splitList(env.getenv(allowedHostsEnv)); len(hosts) > 0 {
		opts = append(opts, dashboard.WithAllowedHosts(hosts...))
	}
	switch strings.ToLower(env.getenv(secureCookieEnv)) {
	case "1", "true", "yes":
		opts = append(opts, dashboard.WithSecureCookie(true))
	}
	if o.metrics != nil {
		opts = append(opts, dashboard.WithTickerCounts(o.metrics.counts))
	}
	if o.token != "" && o.out != nil {
		s, err := schedule.Open(ctx, o.db.DB, runHandler(o.out, nil), schedule.WithClock(o.clock))
		if err != nil {
			return nil, fmt.Errorf("open the schedules for the dashboard: %w", err)
		}
		opts = append(opts, dashboard.WithScheduler(s))
	}
	if err := dashboard.WithAdminToken(o.token)(new(dashboard.Dashboard)); err != nil {
		return nil, usageError{fmt.Errorf("--admin-token: %w", err)}
	}
	d, err := dashboard.New(o.db.DB, append(opts, extra...)...)
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
