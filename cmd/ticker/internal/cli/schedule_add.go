package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/timefmt"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/tick"
)

// addFlags are "ticker schedule add"'s flags as given.
type addFlags struct {
	db                              *dbFlags
	spec                            *specFlags
	tz                              *tzFlag
	name, command, payload, catchUp string
	until, overlap                  string
	window, jitter                  time.Duration
	maxMissed, maxRuns              int
	cmd                             *cobra.Command
}

// addConfig is "ticker schedule add" validated: the definition to store
// in db, shown in loc.
type addConfig struct {
	def schedule.Definition
	loc *time.Location
	db  database
}

func scheduleAddCommand(env Env) *cobra.Command {
	c := &cobra.Command{
		Use:   "add --name NAME --spec SPEC | --spec-file FILE [--tz ZONE] --command CMD [--payload JSON] [--catch-up latest|skip|all] [--max-runs N] [--until T] [--jitter DURATION] [--overlap allow|skip|buffer] [--db passage.db]",
		Short: "store a schedule in a database (or update it), for \"ticker run\" to fire",
		Args:  noArgs,
	}
	f := &addFlags{cmd: c}
	fs := c.Flags()
	f.db = addDB(c, env, "SQLite file or postgres:// DSN \"ticker run\" fires the schedule from (created if need be)")
	fs.StringVar(&f.name, "name", "", "the schedule's name: adding the same name again updates it (required)")
	f.spec = addSpec(c)
	f.tz = addTZ(c, "IANA time zone of a cron expression or a floating DTSTART (stored with the spec), and of --until")
	fs.StringVar(&f.command, "command", "", "the command each run carries (required)")
	fs.StringVar(&f.payload, "payload", "", "the command's payload, a JSON value each run carries as it is (default none: null)")
	fs.StringVar(&f.catchUp, "catch-up", "latest", "slots that passed while nothing fired them: latest (fire the latest once), skip (fire none), all (fire each, see --catch-up-window and --catch-up-max); the rest are reported as SlotsSkipped")
	fs.DurationVar(&f.window, "catch-up-window", 7*24*time.Hour, fmt.Sprintf("--catch-up all: fire missed slots at most this old (%s to %s)", bounds["catch-up-window"].min, bounds["catch-up-window"].max))
	fs.IntVar(&f.maxMissed, "catch-up-max", 100, fmt.Sprintf("--catch-up all: fire at most this many missed slots, the latest (1 to %d)", maxCatchUpMax))
	fs.IntVar(&f.maxRuns, "max-runs", 0, "end the schedule after this many runs (manual triggers do not count); 0 means no limit")
	fs.StringVar(&f.until, "until", "", "end the schedule: no slot after this time; "+timeRule)
	fs.DurationVar(&f.jitter, "jitter", 0, fmt.Sprintf("fire each slot up to this long after its instant, by an offset derived from its slot id (the same on every replica and restart), to spread schedules that share slots; 0 to %s, below the spacing of the slots", schedule.MaxInterval))
	fs.StringVar(&f.overlap, "overlap", "allow", "a slot that comes while a run of the schedule is still open (a run only stays open when a library handler returns schedule.ErrStillRunning): allow (fire it anyway), skip (skip it and report it skipped), buffer (fire it once the open run finishes)")
	c.RunE = func(c *cobra.Command, _ []string) error {
		cfg, err := f.config(env.clock().Now())
		if err != nil {
			return err
		}
		return addSchedule(c.Context(), env, cfg)
	}
	return c
}

// config validates the flags, all before anything is opened: a flag error
// creates no database.
func (f *addFlags) config(now time.Time) (addConfig, error) {
	var cfg addConfig
	var err error
	switch {
	case f.name == "":
		return cfg, usagef("--name is required")
	case f.command == "":
		return cfg, usagef("--command is required")
	}
	if cfg.loc, err = f.tz.location(); err != nil {
		return cfg, err
	}
	d := schedule.Definition{Name: f.name, Command: f.command, MaxRuns: f.maxRuns}
	zone, err := f.tz.specZone()
	if err != nil {
		return cfg, err
	}
	if d.Spec, err = f.spec.parse(zone); err != nil {
		return cfg, err
	}
	// "ticker run" fires a schedule from its stored text, read back with
	// schedule.Parse in the zone the text names; a spec that did not read
	// back the same would be stored and then fail at every slot.
	if back, err := schedule.Parse(d.Spec.String(), nil); err != nil || back.String() != d.Spec.String() {
		return cfg, usagef("--spec: it is stored as %q, which \"ticker run\" cannot read back to fire it (%v)", d.Spec.String(), err)
	}
	if err := fitsTheMinute(d.Spec, now); err != nil {
		return cfg, err
	}
	if f.payload != "" {
		var v any
		if err := json.Unmarshal([]byte(f.payload), &v); err != nil {
			return cfg, usagef("--payload %q: not a JSON value: %v", f.payload, err)
		}
		d.Payload = []byte(f.payload)
	}
	if d.CatchUp, err = f.catchUpPolicy(); err != nil {
		return cfg, err
	}
	if err := f.ends(&d, cfg.loc, now); err != nil {
		return cfg, err
	}
	if d.Overlap, err = parseOverlap(f.overlap); err != nil {
		return cfg, err
	}
	if len(f.name) > 200 {
		return cfg, usagef("--name: %d bytes, at most 200", len(f.name))
	}
	cfg.def = d
	cfg.db, err = f.db.database()
	return cfg, err
}

// catchUpPolicy reads --catch-up, and its bounds for all.
func (f *addFlags) catchUpPolicy() (tick.CatchUp, error) {
	var policy tick.CatchUp
	switch strings.ToLower(strings.TrimSpace(f.catchUp)) {
	case "latest", "latest-only":
		policy = tick.LatestOnly{}
	case "skip":
		policy = tick.Skip{}
	case "all":
		if err := checkBound("catch-up-window", f.window); err != nil {
			return nil, err
		}
		if f.maxMissed < 1 || f.maxMissed > maxCatchUpMax {
			return nil, usagef("--catch-up-max %d: must be between 1 and %d", f.maxMissed, maxCatchUpMax)
		}
		return tick.All{Window: f.window, Max: f.maxMissed}, nil
	default:
		return nil, usagef("--catch-up %q: not latest, skip or all", f.catchUp)
	}
	if f.cmd.Flags().Changed("catch-up-window") || f.cmd.Flags().Changed("catch-up-max") {
		return nil, usagef("--catch-up-window and --catch-up-max apply to --catch-up all only")
	}
	return policy, nil
}

// ends reads --max-runs, --until and --jitter into d.
func (f *addFlags) ends(d *schedule.Definition, loc *time.Location, now time.Time) error {
	if f.maxRuns < 0 {
		return usagef("--max-runs %d: must not be negative", f.maxRuns)
	}
	if f.until != "" {
		var err error
		if d.Until, err = parseUntil(f.until, loc, d.Spec, now); err != nil {
			return err
		}
	}
	// The schedule package refuses a jitter outside [0, MaxInterval]
	// (Sync, ErrInvalidSpec); checked here too so that a flag error
	// creates no database.
	if f.jitter < 0 || f.jitter > schedule.MaxInterval {
		return usagef("--jitter %s: must be between 0s and %s", f.jitter, schedule.MaxInterval)
	}
	d.Jitter = f.jitter
	return nil
}

// addSchedule stores cfg's definition and says what became of it.
func addSchedule(ctx context.Context, env Env, cfg addConfig) error {
	// A mistyped --db (pasage.db) would otherwise leave the schedule in a
	// database no "ticker run" reads, without a word. A new file of the
	// default name is how every first "schedule add" starts: not noted.
	path, _ := cfg.db.sqliteFile()
	created := cfg.db.isNewFile() && filepath.Base(path) != defaultDB
	db, err := cfg.db.open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	s, err := openScheduler(ctx, env, db, refuseRuns)
	if err != nil {
		return err
	}
	d := cfg.def
	res, err := s.Sync(ctx, d)
	if errors.Is(err, schedule.ErrInvalidSpec) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	verb := "unchanged"
	switch {
	case len(res.Added) > 0:
		verb = "added"
	case len(res.Changed) > 0:
		verb = "changed (its next slot is recomputed from now)"
	}
	states, err := s.List(ctx)
	if err != nil {
		return err
	}
	for _, st := range states {
		if st.Name == d.Name {
			fmt.Fprintf(env.Stdout, "%s %s: %s\n", verb, d.Name, nextSlot(st, st.Zone))
		}
	}
	if created {
		fmt.Fprintf(env.Stderr, "note: %s did not exist: created a new database for %s (\"ticker run --db %s\" fires its schedules)\n", path, d.Name, path)
	}
	if gap := slotSpacing(d.Spec, env.clock().Now()); gap > 0 && d.Jitter > gap {
		fmt.Fprintf(env.Stderr, "warning: --jitter %s is longer than the spacing of the slots (%s): a slot can fire after the next one's time, and the catch-up policy then decides between them as between missed slots\n", d.Jitter, gap)
	}
	return nil
}

// parseUntil reads a schedule's --until and refuses one that would end
// the schedule before it fires: one already past (0001-01-01 among them,
// Go's zero time, which the schedule package would read as no end), or
// before the spec's first slot after now. It is an error rather than a
// warning: such a schedule would be stored only to never fire. One past
// the instants the database stores (2262) is refused too.
func parseUntil(value string, loc *time.Location, spec schedule.Spec, now time.Time) (time.Time, error) {
	until, err := parseTime("until", value, loc)
	if err != nil {
		return time.Time{}, err
	}
	switch next := spec.Next(now); {
	case !until.After(now):
		return time.Time{}, usagef("--until %s is already past (now is %s): the schedule would never fire", timefmt.Format(until), timefmt.Format(now.In(loc)))
	case until.After(sqldb.MaxTime):
		return time.Time{}, usagef("--until %s: after the last instant a schedule's end can be stored (%s)", timefmt.Format(until), timefmt.Format(sqldb.MaxTime))
	case !next.IsZero() && until.Before(next):
		return time.Time{}, usagef("--until %s is before the schedule's next slot %s: the schedule would never fire", timefmt.Format(until), timefmt.Format(next.In(loc)))
	}
	return until, nil
}

// parseOverlap reads --overlap: allow, skip or buffer (or buffer-one, as
// the schedule package names it).
func parseOverlap(value string) (schedule.Overlap, error) {
	switch strings.ToLower(strings.TrimSpace(value)) {
	case "allow":
		return schedule.AllowOverlap, nil
	case "skip":
		return schedule.SkipOverlap, nil
	case "buffer", "buffer-one":
		return schedule.BufferOne, nil
	}
	return 0, usagef("--overlap %q: not allow, skip or buffer", value)
}

// slotSpacing is the shortest time between the next few slots of spec
// after now, or 0 when it has fewer than two.
func slotSpacing(spec schedule.Spec, now time.Time) time.Duration {
	var gap time.Duration
	prev := spec.Next(now)
	for i := 0; i < 10 && !prev.IsZero(); i++ {
		next := spec.Next(prev)
		if next.IsZero() {
			break
		}
		if d := next.Sub(prev); gap == 0 || d < gap {
			gap = d
		}
		prev = next
	}
	return gap
}

// nextSlot says when a schedule fires next, or why it does not.
func nextSlot(st schedule.Stored, loc *time.Location) string {
	if loc == nil {
		loc = time.UTC
	}
	switch {
	case st.Paused:
		return "paused, no next slot until resumed"
	case st.Next.IsZero():
		return "ended, no next slot"
	}
	return "next slot " + timefmt.Format(st.Next.In(loc))
}

// spacingSample is how many of a spec's next slots fitsTheMinute reads.
const spacingSample = 1000

// fitsTheMinute refuses a spec with two slots less than a minute apart
// among its next spacingSample: "ticker run" fires schedules when a
// minute passes, so of an "@every 30s" or a six-field cron with seconds
// ("*/10 * * * * *") every slot but the last of each minute would be
// reported skipped. A slot within the minute (a cron's "30 0 * * * *")
// fires at the minute's end, its lateness measured from the slot.
func fitsTheMinute(spec schedule.Spec, now time.Time) error {
	prev := spec.Next(now)
	for range spacingSample {
		if prev.IsZero() {
			return nil
		}
		next := spec.Next(prev)
		if !next.IsZero() && next.Sub(prev) < time.Minute {
			return usagef("--spec %s: slots %s apart (%s and %s), and \"ticker run\" fires schedules when a minute passes, so all but one slot a minute would be skipped: give slots a minute or more apart",
				clipValue(spec.String()), next.Sub(prev), timefmt.Format(prev), timefmt.Format(next))
		}
		prev = next
	}
	return nil
}
