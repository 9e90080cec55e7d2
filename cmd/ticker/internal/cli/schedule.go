package cli

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/tick"
)

// scheduleCommands are the subcommands of "ticker schedule".
func scheduleCommands() []command {
	return []command{
		{"preview", "list the next fire instants of a schedule spec", schedulePreviewCommand, graceOther},
	}
}

func scheduleCommand(ctx context.Context, env Env, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(env.Stdout, "Usage: ticker schedule <subcommand> [flags]   (ticker schedule <subcommand> -h for its flags)")
		fmt.Fprintln(env.Stdout)
		for _, c := range scheduleCommands() {
			fmt.Fprintf(env.Stdout, "  %-8s %s\n", c.name, c.summary)
		}
		if len(args) == 0 {
			return usagef("a subcommand is needed")
		}
		return nil
	}
	for _, c := range scheduleCommands() {
		if c.name == args[0] {
			return c.run(ctx, env, args[1:])
		}
	}
	return usagef("unknown subcommand %q (run \"ticker schedule -h\")", args[0])
}

const specHelp = `a cron expression ("0 12 * * FRI", 6 fields with seconds first, @daily …), ` +
	`"@every 8h" (from the Unix epoch) or "@every 8h from INSTANT", or an iCalendar recurrence: ` +
	`a DTSTART line and RRULE, RDATE, EXDATE lines, separated by newlines or \n`

func schedulePreviewCommand(_ context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "schedule preview", "--spec SPEC | --spec-file FILE [--tz ZONE] [--from T] [-n 10]")
	spec := fs.String("spec", "", "the schedule: "+specHelp)
	specFile := fs.String("spec-file", "", "read the spec from this file instead of --spec")
	tz := fs.String("tz", "UTC", "IANA time zone of a cron expression or a floating DTSTART")
	from := fs.String("from", "", "list the fire instants after this time, default now: "+timeRule)
	n := fs.Int("n", 10, "how many fire instants to list (1–10000)")
	if err := parse(fs, args); err != nil {
		return err
	}
	text := *spec
	switch {
	case (*spec == "") == (*specFile == ""):
		return usagef("give the spec with exactly one of --spec and --spec-file")
	case *specFile != "":
		b, err := os.ReadFile(*specFile)
		if err != nil {
			return usagef("--spec-file %q: %v", *specFile, err)
		}
		text = string(b)
	}
	if *n < 1 || *n > 10000 {
		return usagef("-n %d: must be between 1 and 10000", *n)
	}
	loc, err := loadLocation(*tz)
	if err != nil {
		return err
	}
	s, err := schedule.Parse(text, loc)
	if err != nil {
		return usagef("--spec %q: %v", strings.TrimSpace(text), err)
	}
	start := env.clock().Now().In(loc)
	if *from != "" {
		if start, err = parseTime("from", *from, loc); err != nil {
			return err
		}
	}
	// One instant a line, the instant first, its offset exact to the
	// second (tick.FormatTime), so the output reads back losslessly.
	at := s.Next(start)
	for i := 0; i < *n && !at.IsZero(); i++ {
		fmt.Fprintf(env.Stdout, "%s  %s\n", tick.FormatTime(at), at.Format("Mon"))
		at = s.Next(at)
	}
	if at.IsZero() {
		fmt.Fprintln(env.Stderr, "the schedule has no more fire instants")
	}
	return nil
}
