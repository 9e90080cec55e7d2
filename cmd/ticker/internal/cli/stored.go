package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/timefmt"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/tick"
)

// scheduleTable is the schedule package's table of schedules, read here
// without the package (which would create its tables) by "schedule list"
// and by the checks that must not create anything.
const scheduleTable = "schedule_schedules"

// errNoSchedules is returned for a database without the schedule tables.
var errNoSchedules = errors.New(`no schedules: the database has no schedule tables (add one with "ticker schedule add")`)

// refuseRuns is the handler of the commands that change schedules without
// firing them: the scheduler calls a handler only when a slot fires or a
// run is triggered, which these commands never do.
func refuseRuns(context.Context, *sqlx.Tx, schedule.Run) error {
	return errors.New("this command fires no schedule")
}

func openScheduler(ctx context.Context, env Env, db *sqldb.DB, handler schedule.Handler) (*schedule.Scheduler, error) {
	s, err := schedule.Open(ctx, db.DB, handler, schedule.WithClock(env.clock()))
	if err != nil {
		return nil, fmt.Errorf("open the schedules: %w", err)
	}
	return s, nil
}

// readSpec returns the spec given by exactly one of --spec and --spec-file.
func readSpec(spec, specFile string, loc *time.Location) (schedule.Spec, error) {
	text := spec
	switch {
	case (spec == "") == (specFile == ""):
		return nil, usagef("give the spec with exactly one of --spec and --spec-file")
	case specFile != "":
		b, err := readBounded(specFile, maxSpecBytes)
		if err != nil {
			return nil, usagef("--spec-file %q: %v", specFile, err)
		}
		text = string(b)
	}
	s, err := schedule.Parse(text, loc)
	if err != nil {
		// The parser quotes the spec, or parts of it, in its error: both
		// are cut short, so a bad spec of megabytes gives an error of a
		// line or two.
		return nil, usagef("--spec %s: %s", clipValue(strings.TrimSpace(text)), clipMessage(err.Error()))
	}
	return s, nil
}

func scheduleAddCommand(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "schedule add", "--name NAME --spec SPEC | --spec-file FILE [--tz ZONE] --command CMD [--payload JSON] [--catch-up latest|skip|all] [--max-runs N] [--until T] [--jitter DURATION] [--overlap allow|skip|buffer] [--db passage.db]")
	dsn := fs.String("db", "passage.db", "SQLite file or postgres:// DSN \"ticker run\" fires the schedule from (created if need be)")
	name := fs.String("name", "", "the schedule's name: adding the same name again updates it (required)")
	spec := fs.String("spec", "", "the schedule: "+specHelp)
	specFile := fs.String("spec-file", "", "read the spec from this file instead of --spec")
	tz := fs.String("tz", "UTC", "IANA time zone of a cron expression or a floating DTSTART (stored with the spec), and of --until")
	command := fs.String("command", "", "the command each run carries (required)")
	payload := fs.String("payload", "", "the command's payload, a JSON value each run carries as it is (default none: null)")
	catchUp := fs.String("catch-up", "latest", "slots that passed while nothing fired them: latest (fire the latest once), skip (fire none), all (fire each, see --catch-up-window and --catch-up-max); the rest are reported as SlotsSkipped")
	window := fs.Duration("catch-up-window", 7*24*time.Hour, fmt.Sprintf("--catch-up all: fire missed slots at most this old (%s to %s)", bounds["catch-up-window"].min, bounds["catch-up-window"].max))
	maxMissed := fs.Int("catch-up-max", 100, fmt.Sprintf("--catch-up all: fire at most this many missed slots, the latest (1 to %d)", maxCatchUpMax))
	maxRuns := fs.Int("max-runs", 0, "end the schedule after this many runs (manual triggers do not count); 0 means no limit")
	until := fs.String("until", "", "end the schedule: no slot after this time; "+timeRule)
	jitter := fs.Duration("jitter", 0, fmt.Sprintf("fire each slot up to this long after its instant, by an offset derived from its slot id (the same on every replica and restart), to spread schedules that share slots; 0 to %s, below the spacing of the slots", schedule.MaxInterval))
	overlap := fs.String("overlap", "allow", "a slot that comes while a run of the schedule is still open (a run only stays open when a library handler returns schedule.ErrStillRunning): allow (fire it anyway), skip (skip it and report it skipped), buffer (fire it once the open run finishes)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *name == "" {
		return usagef("--name is required")
	}
	if *command == "" {
		return usagef("--command is required")
	}
	loc, err := loadLocation(*tz)
	if err != nil {
		return err
	}
	d := schedule.Definition{Name: *name, Command: *command, MaxRuns: *maxRuns}
	if d.Spec, err = readSpec(*spec, *specFile, loc); err != nil {
		return err
	}
	// "ticker run" fires a schedule from its stored text, read back with
	// schedule.Parse in the zone the text names; a spec that did not read
	// back the same would be stored and then fail at every slot.
	if back, err := schedule.Parse(d.Spec.String(), nil); err != nil || back.String() != d.Spec.String() {
		return usagef("--spec: it is stored as %q, which \"ticker run\" cannot read back to fire it (%v)", d.Spec.String(), err)
	}
	if *payload != "" {
		var v any
		if err := json.Unmarshal([]byte(*payload), &v); err != nil {
			return usagef("--payload %q: not a JSON value: %v", *payload, err)
		}
		d.Payload = []byte(*payload)
	}
	explicit := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	switch strings.ToLower(strings.TrimSpace(*catchUp)) {
	case "latest", "latest-only":
		d.CatchUp = tick.LatestOnly{}
	case "skip":
		d.CatchUp = tick.Skip{}
	case "all":
		if b := bounds["catch-up-window"]; *window < b.min || *window > b.max {
			return usagef("--catch-up-window %s: must be between %s and %s (%s)", *window, b.min, b.max, b.why)
		}
		if *maxMissed < 1 || *maxMissed > maxCatchUpMax {
			return usagef("--catch-up-max %d: must be between 1 and %d", *maxMissed, maxCatchUpMax)
		}
		d.CatchUp = tick.All{Window: *window, Max: *maxMissed}
	default:
		return usagef("--catch-up %q: not latest, skip or all", *catchUp)
	}
	if _, isAll := d.CatchUp.(tick.All); !isAll && (explicit["catch-up-window"] || explicit["catch-up-max"]) {
		return usagef("--catch-up-window and --catch-up-max apply to --catch-up all only")
	}
	if *maxRuns < 0 {
		return usagef("--max-runs %d: must not be negative", *maxRuns)
	}
	if *until != "" {
		if d.Until, err = parseUntil(*until, loc, d.Spec, env.clock().Now()); err != nil {
			return err
		}
	}
	// The schedule package refuses a jitter outside [0, MaxInterval]
	// (Sync, ErrInvalidSpec); checked here too so that a flag error
	// creates no database.
	if *jitter < 0 || *jitter > schedule.MaxInterval {
		return usagef("--jitter %s: must be between 0s and %s", *jitter, schedule.MaxInterval)
	}
	d.Jitter = *jitter
	if d.Overlap, err = parseOverlap(*overlap); err != nil {
		return err
	}
	if len(*name) > 200 {
		return usagef("--name: %d bytes, at most 200", len(*name))
	}

	db, err := openDB(ctx, *dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	s, err := openScheduler(ctx, env, db, refuseRuns)
	if err != nil {
		return err
	}
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
			fmt.Fprintf(env.Stdout, "%s %s: %s\n", verb, d.Name, nextSlot(st, loc))
		}
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

// overlapName is the --overlap value of a stored overlap policy (the
// schedule package stores Overlap.String: allow, skip, buffer-one).
func overlapName(stored string) string {
	if stored == schedule.BufferOne.String() {
		return "buffer"
	}
	return stored
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
	switch {
	case st.Paused:
		return "paused, no next slot until resumed"
	case st.Next.IsZero():
		return "ended, no next slot"
	}
	return "next slot " + timefmt.Format(st.Next.In(loc))
}

// listedSchedule is a line of "schedule list", and an element of its
// --json array.
type listedSchedule struct {
	Name    string     `json:"name"`
	Next    *sink.Time `json:"next_slot"`
	Paused  bool       `json:"paused"`
	Runs    int64      `json:"runs"`
	Skipped int64      `json:"skipped"`
	Command string     `json:"command"`
	Spec    string     `json:"spec"`
	// MaxRuns and Until end the schedule; left out when it has no end.
	MaxRuns int64      `json:"max_runs,omitempty"`
	Until   *sink.Time `json:"until,omitempty"`
	// Jitter and Overlap are left out at their defaults (none, allow).
	Jitter  string `json:"jitter,omitempty"`
	Overlap string `json:"overlap,omitempty"`
}

func scheduleListCommand(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "schedule list", "[--db passage.db] [--tz UTC] [--json]")
	dsn := fs.String("db", "passage.db", "SQLite file or postgres:// DSN, opened read-only: list never creates, migrates or locks it")
	tz := fs.String("tz", "UTC", "IANA time zone to show the next slots in")
	asJSON := fs.Bool("json", false, "print a JSON array instead of a table")
	if err := parse(fs, args); err != nil {
		return err
	}
	loc, err := loadLocation(*tz)
	if err != nil {
		return err
	}
	// Read-only, like status: the schedule package would create its
	// tables in a database that has none (readonly.go).
	snap, err := openSnapshot(ctx, *dsn, 0)
	if err != nil {
		return err
	}
	defer snap.close()
	tx, tables := snap.tx, snap.tables
	if !tables[scheduleTable] {
		return fmt.Errorf("--db %s: %w", redact(*dsn), errNoSchedules)
	}
	var rows []struct {
		Name     string `db:"name"`
		Spec     string `db:"spec"`
		Command  string `db:"command"`
		Paused   int    `db:"paused"`
		Runs     int64  `db:"runs"`
		Skipped  int64  `db:"skipped"`
		NextSlot int64  `db:"next_slot"`
		MaxRuns  int64  `db:"max_runs"`
		Until    int64  `db:"until"`
		Jitter   int64  `db:"jitter"`
		Overlap  string `db:"overlap"`
	}
	if err := sqlx.SelectContext(ctx, tx, &rows, `SELECT name, spec, command, paused, runs, skipped, next_slot, max_runs, until, jitter, overlap FROM `+scheduleTable+` ORDER BY name`); err != nil {
		return fmt.Errorf("read the schedules: %w", err)
	}
	list := []listedSchedule{} // [] rather than null in JSON
	policies := false          // whether a schedule has a jitter or an overlap policy
	ends := false              // whether a schedule has a max-runs or an until
	for _, r := range rows {
		l := listedSchedule{Name: r.Name, Paused: r.Paused != 0, Runs: r.Runs, Skipped: r.Skipped, Command: r.Command, Spec: r.Spec, MaxRuns: r.MaxRuns}
		if r.NextSlot != 0 {
			l.Next = sink.TimeOf(sqldb.DecodeTime(r.NextSlot).In(loc))
		}
		if r.Until != 0 { // 0 is stored for no end
			l.Until = sink.TimeOf(sqldb.DecodeTime(r.Until).In(loc))
		}
		ends = ends || l.MaxRuns != 0 || l.Until != nil
		if r.Jitter != 0 {
			l.Jitter = time.Duration(r.Jitter).String()
		}
		if o := overlapName(r.Overlap); o != schedule.AllowOverlap.String() {
			l.Overlap = o
		}
		policies = policies || l.Jitter != "" || l.Overlap != ""
		list = append(list, l)
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(list)
	}
	if len(list) == 0 {
		fmt.Fprintln(env.Stdout, "no schedules")
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	// MAX RUNS and UNTIL are shown when a schedule has an end, JITTER and
	// OVERLAP when a schedule has one that is not the default (none,
	// allow): the table of schedules without them stays as it was.
	header := "NAME\tNEXT SLOT\tPAUSED\tRUNS\tSKIPPED\t"
	if ends {
		header += "MAX RUNS\tUNTIL\t"
	}
	if policies {
		header += "JITTER\tOVERLAP\t"
	}
	fmt.Fprintln(tw, header+"COMMAND\tSPEC")
	for _, l := range list {
		next, paused := "-", "no"
		if l.Next != nil {
			next = timefmt.Format(l.Next.Time)
		}
		if l.Paused {
			paused = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t", l.Name, next, paused, l.Runs, l.Skipped)
		if ends {
			maxRuns, until := "-", "-"
			if l.MaxRuns != 0 {
				maxRuns = fmt.Sprint(l.MaxRuns)
			}
			if l.Until != nil {
				until = timefmt.Format(l.Until.Time)
			}
			fmt.Fprintf(tw, "%s\t%s\t", maxRuns, until)
		}
		if policies {
			jitter, overlap := cmp.Or(l.Jitter, "-"), cmp.Or(l.Overlap, schedule.AllowOverlap.String())
			fmt.Fprintf(tw, "%s\t%s\t", jitter, overlap)
		}
		// A recurrence rule's lines are shown as --spec takes them.
		fmt.Fprintf(tw, "%s\t%s\n", l.Command, strings.ReplaceAll(l.Spec, "\n", `\n`))
	}
	return tw.Flush()
}

// namedSchedule parses "schedule pause|resume|delete|trigger" arguments:
// the flags and exactly one schedule name, before or after them.
func namedSchedule(fs *flagSet, args []string) (string, error) {
	if err := parseFlags(fs, args); err != nil {
		return "", err
	}
	var names []string
	for fs.NArg() > 0 {
		names = append(names, fs.Arg(0))
		if err := parseMore(fs, fs.Args()[1:]); err != nil {
			return "", err
		}
	}
	if len(names) != 1 {
		return "", usagef("give exactly one schedule name (got %d)", len(names))
	}
	return names[0], nil
}

// changeSchedule opens the schedules of dsn for a command on the schedule
// name (see withSchedules).
func changeSchedule(ctx context.Context, env Env, dsn, name string, handler handlerOf, change func(*schedule.Scheduler) error) error {
	err := withSchedules(ctx, env, dsn, fmt.Sprintf("no schedule named %q: ", name), handler, change)
	if errors.Is(err, schedule.ErrUnknownSchedule) {
		return fmt.Errorf("no schedule named %q in %s (see \"ticker schedule list\")", name, redact(dsn))
	}
	return err
}

// handlerOf returns the handler of a command's runs over the database it
// opened.
type handlerOf func(*sqldb.DB) (schedule.Handler, error)

// noRuns is the handlerOf of the commands that fire no run.
func noRuns(*sqldb.DB) (schedule.Handler, error) { return refuseRuns, nil }

// withSchedules opens the schedules of dsn for a command, first making
// sure, read-only, that the database has them: a mistyped --db must not
// leave a new database or new tables behind. A database without them is
// an error wrapping errNoSchedules, prefix first.
func withSchedules(ctx context.Context, env Env, dsn, prefix string, handlerOf handlerOf, f func(*schedule.Scheduler) error) error {
	ro, err := openReadOnly(ctx, dsn)
	if err != nil {
		return err
	}
	tables, err := tablesIn(ctx, ro, ro.Dialect)
	_ = ro.Close()
	if err != nil {
		return fmt.Errorf("read %s: %w", redact(dsn), err)
	}
	if !tables[scheduleTable] {
		return fmt.Errorf("%s--db %s: %w", prefix, redact(dsn), errNoSchedules)
	}
	db, err := openDB(ctx, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	handler, err := handlerOf(db)
	if err != nil {
		return err
	}
	s, err := openScheduler(ctx, env, db, handler)
	if err != nil {
		return err
	}
	return f(s)
}

func schedulePruneCommand(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "schedule prune", "[--db passage.db] --older-than 720h | --before T [--tz ZONE]")
	dsn := fs.String("db", "passage.db", "SQLite file or postgres:// DSN holding the schedules")
	olderThan := fs.Duration("older-than", 0, "delete the finished runs whose slot is older than this, e.g. 720h for 30 days")
	before := fs.String("before", "", "delete the finished runs whose slot is before this time: "+timeRule)
	tz := fs.String("tz", "UTC", "IANA time zone of a local --before, and of the summary")
	if err := parse(fs, args); err != nil {
		return err
	}
	loc, err := loadLocation(*tz)
	if err != nil {
		return err
	}
	now := env.clock().Now()
	var cutoff time.Time
	switch {
	case (*olderThan == 0) == (*before == ""):
		return usagef("give exactly one of --older-than and --before: the finished runs whose slot is before it are deleted")
	case *before != "":
		if cutoff, err = parseTime("before", *before, loc); err != nil {
			return err
		}
		if cutoff.After(now) {
			return usagef("--before %s is in the future (now is %s)", timefmt.Format(cutoff), timefmt.Format(now.In(loc)))
		}
	case *olderThan < 0:
		return usagef("--older-than %s: must be positive", *olderThan)
	default:
		cutoff = now.Add(-*olderThan)
	}
	return withSchedules(ctx, env, *dsn, "", noRuns, func(s *schedule.Scheduler) error {
		n, err := s.PruneRuns(ctx, cutoff)
		if err != nil {
			// What was deleted before the failure stays deleted.
			return fmt.Errorf("%w (%s deleted before it)", err, plural(int(n), "run", "runs"))
		}
		fmt.Fprintf(env.Stdout, "pruned %s with a slot before %s\n", plural(int(n), "run", "runs"), timefmt.Format(cutoff.In(loc)))
		return nil
	})
}

// scheduleChangeCommand is pause, resume or delete.
func scheduleChangeCommand(verb, done string, change func(*schedule.Scheduler, context.Context, string) error) func(context.Context, Env, []string) error {
	return func(ctx context.Context, env Env, args []string) error {
		fs := newFlagSet(env, "schedule "+verb, "[--db passage.db] NAME")
		dsn := fs.String("db", "passage.db", "SQLite file or postgres:// DSN holding the schedule")
		name, err := namedSchedule(fs, args)
		if err != nil {
			return err
		}
		return changeSchedule(ctx, env, *dsn, name, noRuns, func(s *schedule.Scheduler) error {
			if err := change(s, ctx, name); err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "%s %s\n", done, name)
			return nil
		})
	}
}

func scheduleTriggerCommand(ctx context.Context, env Env, args []string) error {
	var f runFlags
	fs := newFlagSet(env, "schedule trigger", "[--db passage.db] [--webhook URL]... NAME")
	dsn := fs.String("db", "passage.db", "SQLite file or postgres:// DSN holding the schedule")
	f.sinkFlags(fs)
	name, err := namedSchedule(fs, args)
	if err != nil {
		return err
	}
	if err := f.checkSinkFlags(); err != nil {
		return err
	}
	out, handler, err := f.runsOut(ctx, env)
	if err != nil {
		return err
	}
	return changeSchedule(ctx, env, *dsn, name, handler, func(s *schedule.Scheduler) error {
		run, err := s.Trigger(ctx, name)
		if err != nil {
			return err
		}
		if err := f.printRuns(env, run); err != nil {
			return err
		}
		fmt.Fprintf(env.Stderr, "triggered %s: run %s at %s (slot id %s)\n", name, run.RunID, timefmt.Format(run.FiredAt), run.SlotID)
		return (*out).deliver(ctx, env)
	})
}

func scheduleBackfillCommand(ctx context.Context, env Env, args []string) error {
	var f runFlags
	fs := newFlagSet(env, "schedule backfill", "[--db passage.db] --from T --to T [--tz ZONE] [--webhook URL]... NAME")
	dsn := fs.String("db", "passage.db", "SQLite file or postgres:// DSN holding the schedule")
	from := fs.String("from", "", "run the slots after this time (required): "+timeRule)
	to := fs.String("to", "", "run the slots up to this time, included, which must not be in the future (required)")
	tz := fs.String("tz", "UTC", "IANA time zone of local --from and --to values, and of the summary")
	f.sinkFlags(fs)
	name, err := namedSchedule(fs, args)
	if err != nil {
		return err
	}
	if err := f.checkSinkFlags(); err != nil {
		return err
	}
	loc, err := loadLocation(*tz)
	if err != nil {
		return err
	}
	if *from == "" || *to == "" {
		return usagef("--from and --to are required: the slots in (from, to] that have no run yet are run")
	}
	fromT, err := parseTime("from", *from, loc)
	if err != nil {
		return err
	}
	toT, err := parseTime("to", *to, loc)
	if err != nil {
		return err
	}
	if !fromT.Before(toT) {
		return usagef("--from %s is not before --to %s", timefmt.Format(fromT), timefmt.Format(toT))
	}
	if now := env.clock().Now(); toT.After(now) {
		return usagef("--to %s is in the future (now is %s): only slots that have passed are backfilled", timefmt.Format(toT), timefmt.Format(now.In(loc)))
	}
	out, handler, err := f.runsOut(ctx, env)
	if err != nil {
		return err
	}
	span := fmt.Sprintf("(%s, %s]", timefmt.Format(fromT.In(loc)), timefmt.Format(toT.In(loc)))
	return changeSchedule(ctx, env, *dsn, name, handler, func(s *schedule.Scheduler) error {
		runs, err := s.Backfill(ctx, name, fromT, toT)
		err = errors.Join(err, f.printRuns(env, runs...))
		err = errors.Join(err, (*out).deliver(ctx, env))
		if err != nil {
			if len(runs) > 0 {
				// The runs before the failure are recorded and published;
				// backfilling again runs the rest and none of them twice.
				return fmt.Errorf("%w (%s recorded before it; backfill again for the rest)", err, plural(len(runs), "run", "runs"))
			}
			return err
		}
		fmt.Fprintf(env.Stderr, "backfilled %s of %s in %s", plural(len(runs), "run", "runs"), name, span)
		if len(runs) == 0 {
			fmt.Fprint(env.Stderr, ": no slot in it without a run")
		}
		fmt.Fprintln(env.Stderr)
		return nil
	})
}

// plural is "1 run" or "3 runs".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// runsOut returns the handler of "schedule trigger" and "schedule
// backfill": each run is recorded in the outbox in the transaction that
// records it, as "ticker run" records a fired slot, and the command then
// delivers to its webhooks what they have pending (see deliver). out is
// set once the database is open.
func (f *runFlags) runsOut(ctx context.Context, env Env) (**delivery, handlerOf, error) {
	if err := f.checkSinkFlags(); err != nil {
		return nil, nil, err
	}
	senders, err := f.senders(env)
	if err != nil {
		return nil, nil, err
	}
	// stdout is this command's output, not a relay: a relay's checkpoint
	// is shared by every process, and "ticker run" prints the run on its
	// own stdout too.
	hooks := slices.DeleteFunc(senders, func(s sender) bool { return s.name == "stdout" })
	out := new(*delivery)
	logger := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{ReplaceAttr: losslessTimes}))
	return out, func(db *sqldb.DB) (schedule.Handler, error) {
		d, err := openDelivery(ctx, db, hooks, f.backoff, f.attempts, env.clock(), logger)
		if err != nil {
			return nil, err
		}
		*out = d
		return runHandler(d, nil), nil
	}, nil
}

// printRuns writes the runs' records on stdout, unless only webhooks
// are given.
func (f *runFlags) printRuns(env Env, runs ...schedule.Run) error {
	if len(f.webhooks) > 0 && !f.stdout {
		return nil
	}
	for _, r := range runs {
		body, _, err := sink.Marshal(r)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(env.Stdout, "%s\n", body); err != nil {
			return err
		}
	}
	return nil
}

// deliver drains the command's webhook relays after its runs committed,
// and says what it delivered and left on stderr. A record a receiver
// refused stays in the outbox: "ticker run" (or the next command with
// that webhook) retries it.
func (d *delivery) deliver(ctx context.Context, env Env) error {
	if len(d.relays) == 0 {
		return nil
	}
	dr := d.drain(ctx, drainTimeout)
	fmt.Fprintf(env.Stderr, "webhooks: %s\n", dr.summary())
	return dr.err()
}
