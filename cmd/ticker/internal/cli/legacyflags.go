package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/passage-of-time/passage/internal/sqldb"
)

// command is a subcommand of a group that parses its own flags.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env Env, args []string) error
	grace   time.Duration
}

// names lists subcommands' names, for their command's summary.
func names(cs []command) string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.name
	}
	return strings.Join(out, ", ")
}

// flagSet is a command's flags and its help text.
type flagSet struct {
	*flag.FlagSet
	help   func()
	getenv func(string) string
}

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
		// show the flag's own, not the legacyOnce that wraps it for the
		// parse (whose zero value has none, and made PrintDefaults panic).
		fs.VisitAll(func(f *flag.Flag) {
			switch o := f.Value.(type) {
			case *legacyOnceBool:
				f.Value = o.Value
			case *legacyOnce:
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
			f.Value = &legacyOnceBool{legacyOnce{Value: f.Value}}
			return
		}
		f.Value = &legacyOnce{Value: f.Value}
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

// legacyOnce refuses a second value for a flag.
type legacyOnce struct {
	flag.Value
	set   bool
	first string
}

func (o *legacyOnce) Set(v string) error {
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

// legacyOnceBool is legacyOnce for a boolean flag, which flag must still see as
// one (-once, not -once=true).
type legacyOnceBool struct{ legacyOnce }

func (o *legacyOnceBool) IsBoolFlag() bool { return true }

// openReadOnly is openRead for the commands not yet on database.
func openReadOnly(ctx context.Context, dsn string) (*sqldb.DB, error) {
	return openRead(ctx, dsn, 0, false)
}

// openLiveReadOnly is openRead, live, for the commands not yet on database.
func openLiveReadOnly(ctx context.Context, dsn string) (*sqldb.DB, error) {
	return openRead(ctx, dsn, 0, true)
}
