package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/passage-of-time/passage/internal/timefmt"
	"github.com/passage-of-time/passage/tick"
)

// Version is the ticker's version, set at build time with
// -ldflags "-X github.com/passage-of-time/passage/cmd/ticker/internal/cli.Version=v1.2.3".
var Version = "dev"

// Exit codes.
const (
	ExitOK    = 0
	ExitError = 1 // the command failed while running
	ExitUsage = 2 // bad flags or values
	// ExitAbandoned is returned when the command did not return within its
	// grace period after ctx was cancelled (SIGINT/SIGTERM): Main gives up
	// waiting so that a signal always ends the program, even one whose
	// computation never yields. main turns it into 128+signal.
	ExitAbandoned = 128
	// ExitInterrupted is returned when a signal (ctx cancelled) stopped a
	// command before its work was done ("run --once", "run --until",
	// "demo"…); the command stopped within its bound and said where it
	// stopped. main turns it into 128+signal, as for ExitAbandoned. A
	// stopped "run", whose work is to run until told to stop, exits
	// ExitOK.
	ExitInterrupted = 130
)

// Grace periods after ctx is cancelled. "run" finishes the emission in
// flight and saves its cursor within stopTimeout, so it gets that and a
// little more; every other command has nothing worth waiting for.
const (
	graceRun   = stopTimeout + 2*time.Second
	graceOther = 2 * time.Second
)

// Env is what the command reads from and writes to outside its arguments.
type Env struct {
	Stdout, Stderr io.Writer
	// Getenv reads environment variables (webhook secrets). Nil reads none.
	Getenv func(string) string
	// Clock is the time source; nil means the real clock.
	Clock clockwork.Clock
	// Started, when set, is called by "run" with its ticker once started,
	// so tests can drive it (tick.AdvanceAndWait) instead of sleeping.
	Started func(*tick.Ticker)
	// Grace, when positive, replaces every command's grace period: how
	// long Main waits for the command after ctx is cancelled before it
	// returns ExitAbandoned.
	Grace time.Duration

	// stopBound, when positive, replaces stopTimeout and drainTimeout
	// (export_stop_test.go), so a test of a stop cut short by its bound
	// does not wait 30 s.
	stopBound time.Duration

	// next computes preview's boundaries; nil means tick.Next. Tests
	// replace it with one that never returns (export_test.go).
	next func(tick.Unit, time.Time, *time.Location) time.Time
}

func (e Env) getenv(k string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(k)
}

func (e Env) stopTimeout() time.Duration {
	if e.stopBound > 0 {
		return e.stopBound
	}
	return stopTimeout
}

func (e Env) drainTimeout() time.Duration {
	if e.stopBound > 0 {
		return e.stopBound
	}
	return drainTimeout
}

func (e Env) clock() clockwork.Clock {
	if e.Clock == nil {
		return clockwork.NewRealClock()
	}
	return e.Clock
}

// usageError marks errors in the command line, which exit with ExitUsage.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// interruptedError is a command stopped by a signal before its work was
// done; its message says where it stopped. It exits ExitInterrupted.
type interruptedError struct{ msg string }

func (e interruptedError) Error() string { return e.msg }

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env Env, args []string) error
	grace   time.Duration
}

func commands() []command {
	return []command{
		{"run", "publish the passage of time (JSON lines on stdout, or webhooks)", runCommand, graceRun},
		{"status", "show each unit's cursor and lease, and every to-do list's backlog", statusCommand, graceOther},
		{"preview", "list the next boundaries of a unit in a time zone", previewCommand, graceOther},
		{"schedule", "schedules that send commands: " + names(scheduleCommands()), scheduleCommand, graceOther},
		{"workflow", "durable workflow instances: " + names(workflowCommands()), workflowCommand, graceOther},
		{"serve", "serve the dashboard alone (no ticker): read-only unless given an admin token", serveCommand, graceRun},
		{"demo", "run the ordering example end to end on an accelerated clock", demoCommand, graceOther},
		{"version", "print the version", versionCommand, graceOther},
	}
}

// names lists subcommands' names, for their command's summary.
func names(cs []command) string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.name
	}
	return strings.Join(out, ", ")
}

// Main runs the ticker command with args (without the program name) and
// returns the process exit code. It returns when the command is done or, for
// "run", when ctx is cancelled (SIGINT/SIGTERM): the emission in flight
// finishes, the cursor is saved, and the exit code is 0.
//
// A command that has not returned within its grace period after ctx is
// cancelled is abandoned: Main says so on stderr and returns ExitAbandoned
// while the command's goroutine is left running (the process is about to
// exit). A signal must always end the program, even when a computation
// never yields.
func Main(ctx context.Context, args []string, env Env) int {
	// As people type them: "ticker --version", "ticker help run".
	if len(args) > 0 {
		switch args[0] {
		case "--version", "-version", "-v":
			args = append([]string{"version"}, args[1:]...)
		case "help", "-h", "-help", "--help":
			if len(args) > 1 {
				args = append([]string{args[1], "-h"}, args[2:]...)
			}
		}
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
		printUsage(env.Stdout)
		if len(args) == 0 {
			return ExitUsage
		}
		return ExitOK
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		grace := c.grace
		if env.Grace > 0 {
			grace = env.Grace
		}
		err, ok := runWithGrace(ctx, grace, func() error { return c.run(ctx, env, args[1:]) })
		if !ok {
			fmt.Fprintf(env.Stderr, "ticker %s: still running %s after being told to stop: abandoned\n", c.name, grace)
			return ExitAbandoned
		}
		switch {
		case err == nil || errors.Is(err, flag.ErrHelp):
			return ExitOK
		case errors.As(err, new(interruptedError)):
			fmt.Fprintf(env.Stderr, "ticker %s: %v\n", c.name, err)
			return ExitInterrupted
		case ctx.Err() != nil && errors.Is(err, context.Canceled):
			// The signal cut the command's work short: one quiet line,
			// not the error of whatever it was doing.
			fmt.Fprintf(env.Stderr, "ticker %s: stopped by a signal before it was done\n", c.name)
			return ExitInterrupted
		case errors.As(err, new(usageError)):
			fmt.Fprintf(env.Stderr, "ticker %s: %v\n", c.name, err)
			return ExitUsage
		default:
			fmt.Fprintf(env.Stderr, "ticker %s: %v\n", c.name, err)
			return ExitError
		}
	}
	fmt.Fprintf(env.Stderr, "ticker: unknown command %q (run \"ticker -h\")\n", args[0])
	return ExitUsage
}

// runWithGrace runs f in its own goroutine and returns its error, or
// ok=false when ctx has been cancelled for longer than grace and f has
// still not returned.
func runWithGrace(ctx context.Context, grace time.Duration, f func() error) (err error, ok bool) {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err, true
	case <-ctx.Done():
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case err := <-done:
		return err, true
	case <-timer.C:
		return nil, false
	}
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "ticker publishes the passage of time as domain events.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: ticker <command> [flags]   (ticker help <command>, or ticker <command> -h, for its flags)")
	fmt.Fprintln(w)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
}

// flagSet is a command's flags and its help text.
type flagSet struct {
	*flag.FlagSet
	help   func()
	getenv func(string) string
}

// defaultDB is the --db of every command that works on the ticker's
// database when neither --db nor $PASSAGE_DB (dbEnv) names another.
const defaultDB = "passage.db"

// dbEnv names the environment variable that replaces defaultDB as the
// default of --db: a PostgreSQL DSN holding a password is then kept out
// of the command line, which ps shows to every user of the machine.
const dbEnv = "PASSAGE_DB"

// dbFromEnv makes $PASSAGE_DB the value of a --db flag whose default is
// defaultDB before the command line is parsed, so that a --db given
// there still wins.
func (fs *flagSet) dbFromEnv() {
	f := fs.Lookup("db")
	if f == nil || f.DefValue != defaultDB || fs.getenv == nil {
		return
	}
	if v := strings.TrimSpace(fs.getenv(dbEnv)); v != "" {
		_ = f.Value.Set(v) // a string flag: Set cannot fail
	}
}

// newFlagSet returns a flag set that returns its errors instead of exiting.
// Its help goes to stdout when asked for with -h; after a mistake only the
// error is printed, on stderr, pointing at -h.
func newFlagSet(env Env, name, usage string) *flagSet {
	fs := flag.NewFlagSet("ticker "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	// flag calls Usage on every parse error too; only -h prints the help.
	fs.Usage = func() {}
	return &flagSet{FlagSet: fs, getenv: env.getenv, help: func() {
		// PrintDefaults reads each flag's type and default off its value:
		// show the flag's own, not the onceValue that wraps it for the
		// parse (whose zero value has none, and made PrintDefaults panic).
		fs.VisitAll(func(f *flag.Flag) {
			switch o := f.Value.(type) {
			case *onceBool:
				f.Value = o.Value
			case *onceValue:
				f.Value = o.Value
			}
		})
		fmt.Fprintf(env.Stdout, "Usage: ticker %s %s\n\nFlags:\n", name, usage)
		fs.SetOutput(env.Stdout)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
		if f := fs.Lookup("db"); f != nil && f.DefValue == defaultDB {
			fmt.Fprintf(env.Stdout, "\nEnvironment:\n  %s\n    \tthe default of --db, so that a DSN with a password is not on the command line (ps shows it);\n    \tPGPASSWORD and the other libpq variables also apply to a PostgreSQL DSN\n", dbEnv)
		}
	}}
}

func parse(fs *flagSet, args []string) error {
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// parseFlags parses the flags up to the first argument that is not one.
func parseFlags(fs *flagSet, args []string) error {
	fs.dbFromEnv()
	// A single-value flag given twice would silently keep the last value
	// (flag's behaviour); give it once or not at all.
	fs.VisitAll(func(f *flag.Flag) {
		if _, repeatable := f.Value.(*multiFlag); repeatable {
			return
		}
		if b, ok := f.Value.(boolValue); ok && b.IsBoolFlag() {
			f.Value = &onceBool{onceValue{Value: f.Value}}
			return
		}
		f.Value = &onceValue{Value: f.Value}
	})
	return parseMore(fs, args)
}

// parseMore parses more flags after parseFlags stopped at an argument.
func parseMore(fs *flagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.help()
			return err
		}
		return usageError{fmt.Errorf("%w (run \"%s -h\" for the flags)", err, fs.Name())}
	}
	return nil
}

// onceValue refuses a second value for a flag.
type onceValue struct {
	flag.Value
	set   bool
	first string
}

func (o *onceValue) Set(v string) error {
	if o.set {
		return fmt.Errorf("given twice (%q and %q): give it once", o.first, v)
	}
	o.set, o.first = true, v
	return o.Value.Set(v)
}

// boolValue is how flag recognises a flag that takes no value.
type boolValue interface {
	flag.Value
	IsBoolFlag() bool
}

// onceBool is onceValue for a boolean flag, which flag must still see as
// one (-once, not -once=true).
type onceBool struct{ onceValue }

func (o *onceBool) IsBoolFlag() bool { return true }

func loadLocation(name string) (*time.Location, error) {
	loc, err := time.LoadLocation(name)
	if err != nil || name == "" {
		return nil, usagef("--tz %q: not a time zone of the zone database (try UTC, Local or Europe/Warsaw)", name)
	}
	return loc, nil
}

// timeRule is the flag help's account of how parseTime reads a time.
const timeRule = "an instant with its offset (2026-03-29T01:30:00+01:00, or -00:44:30 with seconds), or a local date or time in --tz: " +
	"a date means its first instant (local midnight, or the first instant after a midnight the clocks skip); " +
	"a local time the clocks skip, or a date the zone skips, is an error, and so is a local time that happens twice (add its offset)"

// parseTime reads the value of a time flag: an instant with an offset, read
// losslessly (timefmt.Parse: an offset may have seconds), or a local date
// or date and time in loc, resolved by the rule in timeRule. It never reads
// a local time as another: what the zone skipped or repeated is an error
// that names the gap or both offsets.
func parseTime(flagName, value string, loc *time.Location) (time.Time, error) {
	if t, err := timefmt.Parse(value); err == nil {
		return t, nil
	}
	if d, err := time.Parse(time.DateOnly, value); err == nil {
		return localDate(flagName, value, d, loc)
	}
	for _, layout := range []string{"2006-01-02T15:04:05.999999999", "2006-01-02T15:04"} {
		if w, err := time.Parse(layout, value); err == nil {
			return localTime(flagName, value, w, loc)
		}
	}
	return time.Time{}, usagef("--%s %q: not a time (use RFC 3339 such as 2026-03-29T00:00:00+01:00, or 2026-03-29 or 2026-03-29T08:00 in --tz)", flagName, value)
}

// localDate is the first instant of the local date d (given as midnight
// UTC) in loc: its midnight, the earlier one if midnight happens twice, or
// the end of the gap if the clocks skip midnight — as tick's Day boundary.
func localDate(flagName, value string, d time.Time, loc *time.Location) (time.Time, error) {
	instants := wallInstants(d, loc)
	if len(instants) > 0 {
		return instants[0], nil
	}
	gapEnd := afterGap(d, loc)
	if y, m, day := gapEnd.Date(); y == d.Year() && m == d.Month() && day == d.Day() {
		return gapEnd, nil
	}
	before := gapEnd.Add(-time.Nanosecond)
	return time.Time{}, usagef("--%s %q: the date does not exist in %s: the clocks jump from %s (%s) to %s (%s)",
		flagName, value, loc, before.Format("2006-01-02 15:04:05"), offset(before), gapEnd.Format("2006-01-02 15:04"), offset(gapEnd))
}

// localTime is the instant the wall clock w (given in UTC) shows in loc, or
// an error when the clocks skip it or show it twice.
func localTime(flagName, value string, w time.Time, loc *time.Location) (time.Time, error) {
	instants := wallInstants(w, loc)
	switch len(instants) {
	case 1:
		return instants[0], nil
	case 0:
		gapEnd := afterGap(w, loc)
		before := gapEnd.Add(-time.Nanosecond)
		return time.Time{}, usagef("--%s %q: %s does not exist in %s: the clocks jump from %s (%s) to %s (%s); give an instant with its offset",
			flagName, value, w.Format("2006-01-02 15:04"), loc, before.Format("15:04:05"), offset(before), gapEnd.Format("15:04"), offset(gapEnd))
	}
	var alternatives []string
	for _, t := range instants {
		alternatives = append(alternatives, timefmt.Format(t))
	}
	return time.Time{}, usagef("--%s %q: %s happens %d times in %s (offsets %s): give the offset, e.g. %s",
		flagName, value, w.Format("2006-01-02 15:04"), len(instants), loc, offsets(instants), strings.Join(alternatives, " or "))
}

// wallInstants returns, in order, every instant at which the wall clock
// of loc shows w's fields (w is in UTC): none in a gap, two in a repeated
// hour. It tries every offset loc uses within two days of w.
func wallInstants(w time.Time, loc *time.Location) []time.Time {
	seen := map[int]bool{}
	var out []time.Time
	for probe := w.Add(-48 * time.Hour); probe.Before(w.Add(48 * time.Hour)); {
		_, off := probe.In(loc).Zone()
		if !seen[off] {
			seen[off] = true
			t := w.Add(-time.Duration(off) * time.Second).In(loc)
			if _, got := t.Zone(); got == off {
				out = append(out, t)
			}
		}
		_, end := probe.In(loc).ZoneBounds()
		if end.IsZero() || !end.After(probe) {
			break
		}
		probe = end
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}

// afterGap is the first instant after the gap that skips the wall clock w:
// the transition at which loc's clocks jump past it.
func afterGap(w time.Time, loc *time.Location) time.Time {
	// Read w with the offset in force a day before: that instant lies in
	// or after the gap, and the transition is the start of its zone.
	_, off := w.Add(-24 * time.Hour).In(loc).Zone()
	start, _ := w.Add(-time.Duration(off) * time.Second).In(loc).ZoneBounds()
	return start
}

func offset(t time.Time) string {
	if _, off := t.Zone(); off%60 != 0 {
		return t.Format("-07:00:00")
	}
	return t.Format("-07:00")
}

func offsets(ts []time.Time) string {
	var out []string
	for _, t := range ts {
		out = append(out, offset(t))
	}
	return strings.Join(out, " and ")
}

func versionCommand(_ context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "version", "")
	if err := parse(fs, args); err != nil {
		return err
	}
	v := Version
	if info, ok := debug.ReadBuildInfo(); ok && v == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v = info.Main.Version
	}
	fmt.Fprintf(env.Stdout, "ticker %s\n", v)
	return nil
}
