package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"time"

	"github.com/jonboulle/clockwork"

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
}

func (e Env) getenv(k string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(k)
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

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env Env, args []string) error
}

func commands() []command {
	return []command{
		{"run", "publish the passage of time (JSON lines on stdout, or webhooks)", runCommand},
		{"status", "show each unit's cursor and lease, and every to-do list's backlog", statusCommand},
		{"preview", "list the next boundaries of a unit in a time zone", previewCommand},
		{"demo", "run the ordering example end to end on an accelerated clock", demoCommand},
		{"version", "print the version", versionCommand},
	}
}

// Main runs the ticker command with args (without the program name) and
// returns the process exit code. It returns when the command is done or, for
// "run", when ctx is cancelled (SIGINT/SIGTERM): the emission in flight
// finishes, the cursor is saved, and the exit code is 0.
func Main(ctx context.Context, args []string, env Env) int {
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
		err := c.run(ctx, env, args[1:])
		switch {
		case err == nil || errors.Is(err, flag.ErrHelp):
			return ExitOK
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

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "ticker publishes the passage of time as domain events.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: ticker <command> [flags]   (ticker <command> -h for its flags)")
	fmt.Fprintln(w)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
}

// flagSet is a command's flags and its help text.
type flagSet struct {
	*flag.FlagSet
	help func()
}

// newFlagSet returns a flag set that returns its errors instead of exiting.
// Its help goes to stdout when asked for with -h; after a mistake only the
// error is printed, on stderr, pointing at -h.
func newFlagSet(env Env, name, usage string) *flagSet {
	fs := flag.NewFlagSet("ticker "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	// flag calls Usage on every parse error too; only -h prints the help.
	fs.Usage = func() {}
	return &flagSet{FlagSet: fs, help: func() {
		fmt.Fprintf(env.Stdout, "Usage: ticker %s %s\n\nFlags:\n", name, usage)
		fs.SetOutput(env.Stdout)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}}
}

func parse(fs *flagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.help()
			return err
		}
		return usageError{fmt.Errorf("%w (run \"%s -h\" for the flags)", err, fs.Name())}
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

func loadLocation(name string) (*time.Location, error) {
	loc, err := time.LoadLocation(name)
	if err != nil || name == "" {
		return nil, usagef("--tz %q: not a time zone of the zone database (try UTC, Local or Europe/Warsaw)", name)
	}
	return loc, nil
}

func parseTime(flagName, value string, loc *time.Location) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, value, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, usagef("--%s %q: not a time (use RFC 3339 such as 2026-03-29T00:00:00+01:00, or 2026-03-29 in --tz)", flagName, value)
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
