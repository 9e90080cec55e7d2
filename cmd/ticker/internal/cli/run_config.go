package cli

import (
	"math"
	"net"
	"strings"
	"time"

	"github.com/passage-of-time/passage/internal/timefmt"
	"github.com/passage-of-time/passage/outbox"
	"github.com/passage-of-time/passage/tick"
	"github.com/spf13/cobra"
)

// runConfig is "ticker run" validated: everything is checked before a
// server is dialled or the database opened, so a flag error opens and
// creates nothing.
type runConfig struct {
	db        database
	units     []tick.Unit
	unitsText string // --units as given, for the line run says when it starts
	loc       *time.Location
	opts      []tick.Option // clock, zone, units, catch-up policies
	// until is --until (zero without): a backfill up to it.
	until      time.Time
	once       bool
	schedules  bool // fire the stored schedules (not in a backfill)
	httpAddr   string
	adminToken string
	holder     string
	leaseTTL   time.Duration
	// horizonLimit is --horizon-limit (horizon.go).
	horizonLimit time.Duration
	// retention is --outbox-retention (0: never prune), from --from
	// (retention.go).
	retention time.Duration
	from      outbox.From
	sinks     *sinkFlags
}

// backfill reports whether the run is a backfill (--until).
func (c runConfig) backfill() bool { return !c.until.IsZero() }

// The years sqldb.EncodeTime stores exactly.
var (
	minStorable = time.Unix(0, math.MinInt64).UTC()
	maxStorable = time.Unix(0, math.MaxInt64).UTC()
)

// config validates the flags into the run's configuration.
func (f *runFlags) config(env Env) (runConfig, error) {
	cfg := runConfig{
		once: f.once, httpAddr: f.httpAddr, holder: f.holder, leaseTTL: f.leaseTTL,
		unitsText: f.units, sinks: f.sinks, adminToken: adminToken(env, f.adminToken),
	}
	if err := f.tickerOptions(env, &cfg); err != nil {
		return cfg, err
	}
	if f.until != "" {
		if err := f.untilTime(env, &cfg); err != nil {
			return cfg, err
		}
	}
	if f.httpAddr != "" {
		if f.once || cfg.backfill() {
			return cfg, usagef("--http %q: serves only while \"ticker run\" keeps running, not with --once or --until", f.httpAddr)
		}
		if err := checkHTTPAddr(f.httpAddr); err != nil {
			return cfg, err
		}
	}
	if err := f.checkIgnored(); err != nil {
		return cfg, err
	}
	err := checkHorizonLimit(*f.horizonLimit)
	if err != nil {
		return cfg, err
	}
	cfg.horizonLimit = *f.horizonLimit
	if cfg.retention, cfg.from, err = f.retention.check(); err != nil {
		return cfg, err
	}
	// A backfill re-emits past boundaries for their receivers; schedules
	// have catch-up policies of their own and are not fired by it.
	cfg.schedules = f.schedules && !cfg.backfill()
	if cfg.holder == "" {
		cfg.holder = tick.NewHolderID()
	}
	cfg.db, err = f.db.database()
	return cfg, err
}

// tickerOptions checks the ticker's flags and the sinks' into cfg.
func (f *runFlags) tickerOptions(env Env, cfg *runConfig) error {
	var err error
	if cfg.loc, err = f.tz.location(); err != nil {
		return err
	}
	if cfg.units, err = parseUnits(f.units); err != nil {
		return err
	}
	for _, d := range []struct {
		name  string
		value time.Duration
	}{{"catch-up-window", f.window}, {"lease-ttl", f.leaseTTL}, {"webhook-backoff", f.sinks.backoff}} {
		if err := checkBound(d.name, d.value); err != nil {
			return err
		}
	}
	if f.max < 1 || f.max > maxCatchUpMax {
		return usagef("--catch-up-max %d: must be between 1 and %d", f.max, maxCatchUpMax)
	}
	if err := f.sinks.check(); err != nil {
		return err
	}
	if err := f.sinks.checkNATS(); err != nil {
		return err
	}
	cfg.opts = []tick.Option{tick.WithClock(env.clock()), tick.WithLocation(cfg.loc), tick.WithUnits(cfg.units...)}
	policies, err := parseCatchUp(f.catchUp, cfg.units, tick.All{Window: f.window, Max: f.max})
	if err != nil {
		return err
	}
	for _, u := range cfg.units {
		cfg.opts = append(cfg.opts, tick.WithCatchUp(u, policies[u]))
	}
	return nil
}

// untilTime reads --until: a past instant a cursor can hold, without
// --once.
func (f *runFlags) untilTime(env Env, cfg *runConfig) error {
	if f.once {
		return usagef("--once and --until %q: choose one", f.until)
	}
	until, err := parseTime("until", f.until, cfg.loc)
	if err != nil {
		return err
	}
	// Cursors are stored as nanoseconds since 1970 in an int64; an
	// --until outside those years (0001-01-01 is the zero time) is
	// behind or beyond anything a ticker can have recorded.
	if until.Before(minStorable) || until.After(maxStorable) {
		return usagef("--until %q: outside the years a cursor can hold (%d to %d)", f.until, minStorable.Year(), maxStorable.Year())
	}
	if now := env.clock().Now(); until.After(now) {
		return usagef("--until %s is in the future (now is %s)", timefmt.Format(until), timefmt.Format(now.In(cfg.loc)))
	}
	cfg.until = until
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
	if f.given("horizon-limit") && (f.once || f.until != "") {
		return usagef("--horizon-limit: names a transaction holding delivery back while \"ticker run\" keeps running, not with --once or --until")
	}
	if f.until != "" && f.schedules && f.given("schedules") {
		return usagef("--schedules: a backfill (--until) re-emits boundaries only; schedules are not fired by it (ticker schedule backfill runs their past slots)")
	}
	units, _ := parseUnits(f.units) // already checked by tickerOptions
	policies, _ := parseCatchUp(f.catchUp, units, tick.All{})
	for _, p := range policies {
		if _, ok := p.(tick.All); ok {
			return nil
		}
	}
	for _, name := range []string{"catch-up-window", "catch-up-max"} {
		if f.given(name) {
			return usagef("--%s: bounds the catch-up policy all, which --catch-up %q gives no unit", name, f.catchUp)
		}
	}
	return nil
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

// runFlags are "ticker run"'s flags as given; config validates them.
type runFlags struct {
	db                              *dbFlags
	tz                              *tzFlag
	sinks                           *sinkFlags
	units, catchUp, until, httpAddr string
	holder, adminToken              string
	window, leaseTTL                time.Duration
	horizonLimit                    *time.Duration
	retention                       *retentionFlags
	max                             int
	once, schedules                 bool
	cmd                             *cobra.Command
}

// given reports whether the flag name was set on the command line (its
// value may still equal the default: --webhook-attempts 360 was given).
func (f *runFlags) given(name string) bool { return f.cmd.Flags().Changed(name) }
