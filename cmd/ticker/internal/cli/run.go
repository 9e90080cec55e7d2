package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

func runCommand(env Env) *cobra.Command {
	c := &cobra.Command{
		Use:   "run [--db passage.db] [--units minute,hour,day] [--tz UTC] [--once | --until T] [--webhook URL]... [--nats URL]",
		Short: "publish the passage of time (JSON lines on stdout, or webhooks)",
		Args:  noArgs,
	}
	f := &runFlags{cmd: c}
	fs := c.Flags()
	f.db = addDB(c, env, "SQLite file, or a postgres:// DSN for several machines")
	fs.StringVar(&f.units, "units", "minute,hour,day", "comma-separated units to publish")
	f.tz = addTZ(c, "IANA time zone boundaries are computed in")
	fs.StringVar(&f.catchUp, "catch-up", "", "per-unit catch-up policy after downtime, e.g. minute=latest,hour=all,day=skip (all, latest or skip; default all)")
	fs.DurationVar(&f.window, "catch-up-window", 7*24*time.Hour, fmt.Sprintf("policy all: emit missed boundaries at most this old (%s to %s)", bounds["catch-up-window"].min, bounds["catch-up-window"].max))
	fs.IntVar(&f.max, "catch-up-max", 10080, fmt.Sprintf("policy all: emit at most this many missed boundaries per unit (1 to %d)", maxCatchUpMax))
	f.sinks = addSinks(c)
	f.sinks.addNATS(c)
	fs.BoolVar(&f.once, "once", false, "emit whatever is due up to now, release the lease, print one line of what was done on stderr, and exit (for an external timer)")
	fs.StringVar(&f.until, "until", "", "backfill every boundary up to this time (not in the future; behind every cursor is a no-op, said so), release the lease and exit; "+timeRule)
	fs.StringVar(&f.httpAddr, "http", "", "serve /healthz, /metrics and the dashboard on this address, e.g. 127.0.0.1:9090 (not with --once or --until)")
	fs.StringVar(&f.adminToken, "admin-token", "", "allow the dashboard's actions (pause, trigger, signal, re-activate…) to whoever logs in with this token, 16 bytes or more (default $"+adminTokenEnv+"; without one the dashboard is read-only)")
	fs.StringVar(&f.holder, "holder", "", "lease holder id among replicas (default host:pid:random, unique per process)")
	fs.BoolVar(&f.schedules, "schedules", true, "fire the schedules stored in --db (\"ticker schedule add\") on minute boundaries, each run recorded with its firing and delivered as a ScheduleRun record through the same sinks; needs minute in --units when there are any; not with --until")
	f.horizonLimit = addHorizonLimit(c)
	f.retention = addRetention(c)
	fs.DurationVar(&f.leaseTTL, "lease-ttl", 30*time.Second, fmt.Sprintf("how long a dead replica's lease blocks the others (%s to %s)", bounds["lease-ttl"].min, bounds["lease-ttl"].max))
	c.RunE = func(c *cobra.Command, _ []string) error {
		cfg, err := f.config(env)
		if err != nil {
			return err
		}
		return run(c.Context(), env, cfg)
	}
	return c
}

// run is "ticker run" with cfg: a pass (--once), a backfill (--until),
// or the ticker until ctx ends.
func run(ctx context.Context, env Env, cfg runConfig) error {
	r := &runner{env: env, cfg: cfg, clock: env.clock()}
	defer r.close()
	if err := r.open(ctx); err != nil {
		return err
	}
	switch {
	case cfg.once:
		return r.once(ctx)
	case cfg.backfill():
		return r.backfill(ctx)
	}
	return r.serve(ctx)
}
