package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
	"github.com/passage-of-time/passage/internal/sqldb"
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
		b, err := os.ReadFile(specFile)
		if err != nil {
			return nil, usagef("--spec-file %q: %v", specFile, err)
		}
		text = string(b)
	}
	s, err := schedule.Parse(text, loc)
	if err != nil {
		return nil, usagef("--spec %q: %v", strings.TrimSpace(text), err)
	}
	return s, nil
}

func scheduleAddCommand(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "schedule add", "--name NAME --spec SPEC | --spec-file FILE [--tz ZONE] --command CMD [--payload JSON] [--catch-up latest|skip|all] [--max-runs N] [--until T] [--db passage.db]")
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
		if d.Until, err = parseTime("until", *until, loc); err != nil {
			return err
		}
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
	return nil
}

// nextSlot says when a schedule fires next, or why it does not.
func nextSlot(st schedule.State, loc *time.Location) string {
	switch {
	case st.Paused:
		return "paused, no next slot until resumed"
	case st.Next.IsZero():
		return "ended, no next slot"
	}
	return "next slot " + tick.FormatTime(st.Next.In(loc))
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
	snap, err := openSnapshot(ctx, *dsn)
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
	}
	if err := sqlx.SelectContext(ctx, tx, &rows, `SELECT name, spec, command, paused, runs, skipped, next_slot FROM `+scheduleTable+` ORDER BY name`); err != nil {
		return fmt.Errorf("read the schedules: %w", err)
	}
	list := []listedSchedule{} // [] rather than null in JSON
	for _, r := range rows {
		l := listedSchedule{Name: r.Name, Paused: r.Paused != 0, Runs: r.Runs, Skipped: r.Skipped, Command: r.Command, Spec: r.Spec}
		if r.NextSlot != 0 {
			l.Next = sink.TimeOf(sqldb.DecodeTime(r.NextSlot).In(loc))
		}
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
	fmt.Fprintln(tw, "NAME\tNEXT SLOT\tPAUSED\tRUNS\tSKIPPED\tCOMMAND\tSPEC")
	for _, l := range list {
		next, paused := "-", "no"
		if l.Next != nil {
			next = tick.FormatTime(l.Next.Time)
		}
		if l.Paused {
			paused = "yes"
		}
		// A recurrence rule's lines are shown as --spec takes them.
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\n", l.Name, next, paused, l.Runs, l.Skipped, l.Command, strings.ReplaceAll(l.Spec, "\n", `\n`))
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
// name, first making sure, read-only, that the database has them: a
// mistyped --db must not leave a new database or new tables behind.
func changeSchedule(ctx context.Context, env Env, dsn, name string, handler schedule.Handler, change func(*schedule.Scheduler) error) error {
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
		return fmt.Errorf("no schedule named %q: --db %s: %w", name, redact(dsn), errNoSchedules)
	}
	db, err := openDB(ctx, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	s, err := openScheduler(ctx, env, db, handler)
	if err != nil {
		return err
	}
	err = change(s)
	if errors.Is(err, schedule.ErrUnknownSchedule) {
		return fmt.Errorf("no schedule named %q in %s (see \"ticker schedule list\")", name, redact(dsn))
	}
	return err
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
		return changeSchedule(ctx, env, *dsn, name, refuseRuns, func(s *schedule.Scheduler) error {
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
	pub, err := f.publisher(env)
	if err != nil {
		return err
	}
	// The run is published as "ticker run" publishes a fired slot, in the
	// transaction that records it: a sink that refuses it leaves no run
	// recorded, and the command fails.
	publish := func(ctx context.Context, _ *sqlx.Tx, run schedule.Run) error { return pub.Publish(ctx, run) }
	return changeSchedule(ctx, env, *dsn, name, publish, func(s *schedule.Scheduler) error {
		run, err := s.Trigger(ctx, name)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stderr, "triggered %s: run %s at %s (slot id %s)\n", name, run.RunID, tick.FormatTime(run.FiredAt), run.SlotID)
		return nil
	})
}
