package cli

import (
	"context"
	"fmt"

	"github.com/passage-of-time/passage/internal/timefmt"
	"github.com/passage-of-time/passage/schedule"
)

// scheduleCommands are the subcommands of "ticker schedule".
func scheduleCommands() []command {
	return []command{
		{"preview", "list the next fire instants of a schedule spec", schedulePreviewCommand, graceOther},
		{"add", "store a schedule in a database (or update it), for \"ticker run\" to fire", scheduleAddCommand, graceOther},
		{"list", "list the stored schedules: next slot, paused, runs, skipped, end (max runs, until)", scheduleListCommand, graceOther},
		{"pause", "stop a schedule from firing until resumed", scheduleChangeCommand("pause", "paused", (*schedule.Scheduler).Pause), graceOther},
		{"resume", "let a paused schedule fire again from its next slot after now", scheduleChangeCommand("resume", "resumed", (*schedule.Scheduler).Resume), graceOther},
		{"trigger", "run a schedule now, outside its plan, publishing the run like \"ticker run\"", scheduleTriggerCommand, graceOther},
		{"backfill", "run the slots of a past range that have no run yet, publishing each run like \"ticker run\"", scheduleBackfillCommand, graceOther},
		{"delete", "remove a schedule (its recorded runs stay)", scheduleChangeCommand("delete", "deleted", (*schedule.Scheduler).Delete), graceOther},
		{"prune", "delete the finished runs of every schedule whose slot is before a time (nothing else does)", schedulePruneCommand, graceOther},
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
			// Errors name the subcommand: "ticker schedule pause: …".
			if err := c.run(ctx, env, args[1:]); err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			return nil
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
	if *n < 1 || *n > 10000 {
		return usagef("-n %d: must be between 1 and 10000", *n)
	}
	loc, err := loadLocation(*tz)
	if err != nil {
		return err
	}
	s, err := readSpec(*spec, *specFile, loc)
	if err != nil {
		return err
	}
	start := env.clock().Now().In(loc)
	if *from != "" {
		if start, err = parseTime("from", *from, loc); err != nil {
			return err
		}
	}
	// One instant a line, the instant first, its offset exact to the
	// second (timefmt.Format), so the output reads back losslessly.
	at := s.Next(start)
	for range *n {
		switch {
		case at.IsZero():
			fmt.Fprintln(env.Stderr, "the schedule has no more fire instants")
			return nil
		case !readsBack(at):
			fmt.Fprintf(env.Stderr, "no more fire instants listed: the next, %s, is after the last instant RFC 3339 can write (%s)\n",
				at.Format("2006-01-02 15:04 -07:00"), lastWritable)
			return nil
		}
		fmt.Fprintf(env.Stdout, "%s  %s\n", timefmt.Format(at), at.Format("Mon"))
		at = s.Next(at)
	}
	if at.IsZero() {
		fmt.Fprintln(env.Stderr, "the schedule has no more fire instants")
	}
	return nil
}
