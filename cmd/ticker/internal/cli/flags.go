package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The flags every command declares the same way are declared here, once:
// --db and --db-max-conns (db.go reads them), --tz, -n/--count, --json.
// A command declares the rest beside its own code and validates them all
// into its config struct before it opens anything.

// tzFlag is a --tz: the name of an IANA time zone, read by location.
type tzFlag struct {
	name string
	c    *cobra.Command // whose flags tell whether --tz was given
}

// addTZ declares --tz, UTC by default; usage says what the zone is for.
func addTZ(c *cobra.Command, usage string) *tzFlag {
	tz := &tzFlag{c: c}
	c.Flags().StringVar(&tz.name, "tz", "UTC", usage)
	return tz
}

// addCount declares -n (--count), how many lines a preview lists.
func addCount(c *cobra.Command, what string) *int {
	return c.Flags().IntP("count", "n", 10, "how many "+what+" to list (1–10000)")
}

// checkCount refuses a -n outside 1 to 10000.
func checkCount(n int) error {
	if n < 1 || n > 10000 {
		return usagef("-n %d: must be between 1 and 10000", n)
	}
	return nil
}

// addJSON declares --json; usage says what it prints instead.
func addJSON(c *cobra.Command, usage string) *bool {
	return c.Flags().Bool("json", false, usage)
}

// noArgs refuses a positional argument of a command that takes none.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	return nil
}

// flagError is the flag parser's error in the words of Go's flag
// package, which the binary parsed with before cobra ("invalid value
// "30" for flag -jitter: parse error"), and a pointer to the command's
// flags: what scripts and the docs already show.
func flagError(c *cobra.Command, err error) error {
	return usageError{fmt.Errorf("%s (run \"%s -h\" for the flags)", goFlagWords(err), c.CommandPath())}
}

func goFlagWords(err error) string {
	var (
		notExist *pflag.NotExistError
		required *pflag.ValueRequiredError
		invalid  *pflag.InvalidValueError
		syntax   *pflag.InvalidSyntaxError
	)
	switch {
	case errors.As(err, &notExist):
		if s := notExist.GetSpecifiedShortnames(); s != "" {
			return "flag provided but not defined: -" + s
		}
		return "flag provided but not defined: -" + notExist.GetSpecifiedName()
	case errors.As(err, &required):
		return "flag needs an argument: -" + flagName(required.GetFlag())
	case errors.As(err, &invalid):
		f, cause := invalid.GetFlag(), errors.Unwrap(invalid)
		// pflag's own values return strconv's and time's errors; Go's
		// flag said which of two things went wrong. Our values' errors
		// (onceValue's "given twice") are shown as they are.
		var num *strconv.NumError
		if f.Value.Type() == "bool" && !errors.As(cause, &num) {
			// A bool flag's value is rarely typed ("--once --once"): Go's
			// flag named the flag alone.
			return fmt.Sprintf("invalid boolean flag %s: %v", f.Name, cause)
		}
		switch {
		case errors.As(cause, &num) && errors.Is(num.Err, strconv.ErrRange):
			cause = errors.New("value out of range")
		case errors.As(cause, &num), f.Value.Type() == "duration" && strings.HasPrefix(cause.Error(), "time: "):
			cause = errors.New("parse error")
		}
		if f.Value.Type() == "bool" {
			return fmt.Sprintf("invalid boolean value %q for -%s: %v", invalid.GetValue(), flagName(f), cause)
		}
		return fmt.Sprintf("invalid value %q for flag -%s: %v", invalid.GetValue(), flagName(f), cause)
	case errors.As(err, &syntax):
		return "bad flag syntax: " + syntax.GetSpecifiedFlag()
	}
	return err.Error()
}

// flagName is how an error names f: by its one letter when it has one
// (-n), as the commands' own messages do.
func flagName(f *pflag.Flag) string {
	if f.Shorthand != "" {
		return f.Shorthand
	}
	return f.Name
}

// onceOnly makes every single-value flag of c and its subcommands refuse
// a second value: pflag, like Go's flag, would silently keep the last
// ("--catch-up minute=all --catch-up minute=skip"). A repeatable flag
// (--webhook) is left as it is. printHelp shows the flags' own values.
func onceOnly(c *cobra.Command) {
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if _, repeatable := f.Value.(*multiFlag); !repeatable {
			f.Value = &onceValue{Value: f.Value}
		}
	})
	for _, sub := range c.Commands() {
		onceOnly(sub)
	}
}

// unwrapOnce undoes onceOnly on c's flags, for their help.
func unwrapOnce(c *cobra.Command) {
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if o, ok := f.Value.(*onceValue); ok {
			f.Value = o.Value
		}
	})
}

// onceValue refuses a second value for a flag.
type onceValue struct {
	pflag.Value
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

// multiFlag is a repeatable string flag (--webhook, --allowed-host).
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
func (m *multiFlag) Type() string       { return "URL" }

// gnuStyle rewrites a long flag given with one dash ("-db x", as Go's
// flag package read it) with two, as pflag reads it: "-db" would be the
// flags d and b. A word that names no long flag of c's tree (-n, -h, a
// value such as -1h) is left as it is, and so is all after "--".
func gnuStyle(c *cobra.Command, args []string) []string {
	long := map[string]bool{"help": true}
	var collect func(*cobra.Command)
	collect = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) { long[f.Name] = len(f.Name) > 1 })
		for _, sub := range c.Commands() {
			collect(sub)
		}
	}
	collect(c)
	out := make([]string, len(args))
	copy(out, args)
	for i, a := range out {
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") || strings.HasPrefix(a, "--") {
			continue
		}
		name, _, _ := strings.Cut(a[1:], "=")
		if long[name] {
			out[i] = "-" + a
		}
	}
	return out
}

// location is the zone --tz names.
func (tz *tzFlag) location() (*time.Location, error) { return loadLocation(tz.name) }

// specZone is the zone a spec is read in: the one --tz names when it is
// given, else nil — UTC for a spec without a zone of its own, while one
// that names its zone (CRON_TZ=…, as "schedule list" prints it) keeps it
// instead of being refused for naming another zone than the default.
func (tz *tzFlag) specZone() (*time.Location, error) {
	if !tz.c.Flags().Changed("tz") {
		return nil, nil
	}
	return tz.location()
}

// printJSON prints v as indented JSON, what every --json prints.
func printJSON(env Env, v any) error {
	enc := json.NewEncoder(env.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
