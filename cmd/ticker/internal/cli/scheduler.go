package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/spf13/cobra"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/schedule"
)

const specHelp = `a cron expression ("0 12 * * FRI", 6 fields with seconds first, @daily …), ` +
	`"@every 8h" (from the Unix epoch) or "@every 8h from INSTANT", or an iCalendar recurrence: ` +
	`a DTSTART line and RRULE, RDATE, EXDATE lines, separated by newlines or \n`

// errNoSchedules is returned for a database without the schedule tables.
var errNoSchedules = errors.New(`no schedules: the database has no schedule tables (add one with "ticker schedule add")`)

// specFlags are --spec and --spec-file, of which exactly one is given.
type specFlags struct{ spec, file string }

// addSpec declares --spec and --spec-file.
func addSpec(c *cobra.Command) *specFlags {
	s := &specFlags{}
	c.Flags().StringVar(&s.spec, "spec", "", "the schedule: "+specHelp)
	c.Flags().StringVar(&s.file, "spec-file", "", "read the spec from this file instead of --spec")
	return s
}

// parse returns the spec given by exactly one of --spec and --spec-file,
// read in loc.
func (s *specFlags) parse(loc *time.Location) (schedule.Spec, error) {
	text := s.spec
	switch {
	case (s.spec == "") == (s.file == ""):
		return nil, usagef("give the spec with exactly one of --spec and --spec-file")
	case s.file != "":
		b, err := readBounded(s.file, maxSpecBytes)
		if err != nil {
			return nil, usagef("--spec-file %q: %v", s.file, err)
		}
		text = string(b)
	}
	spec, err := schedule.Parse(text, loc)
	if err != nil {
		// The parser quotes the spec, or parts of it, in its error: both
		// are cut short, so a bad spec of megabytes gives an error of a
		// line or two.
		return nil, usagef("--spec %s: %s", clipValue(strings.TrimSpace(text)), clipMessage(err.Error()))
	}
	return spec, nil
}

// oneSchedule takes exactly one schedule name, before or after the flags.
func oneSchedule(_ *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usagef("give exactly one schedule name (got %d)", len(args))
	}
	return nil
}

// refuseRuns is the handler of the commands that change schedules without
// firing them: the scheduler calls a handler only when a slot fires or a
// run is triggered, which these commands never do.
func refuseRuns(context.Context, *sqlx.Tx, schedule.Run) error {
	return errors.New("this command fires no schedule")
}

// handlerOf returns the handler of a command's runs over the database it
// opened.
type handlerOf func(*sqldb.DB) (schedule.Handler, error)

// noRuns is the handlerOf of the commands that fire no run.
func noRuns(*sqldb.DB) (schedule.Handler, error) { return refuseRuns, nil }

func openScheduler(ctx context.Context, env Env, db *sqldb.DB, handler schedule.Handler) (*schedule.Scheduler, error) {
	s, err := schedule.Open(ctx, db.DB, handler, schedule.WithClock(env.clock()))
	if err != nil {
		return nil, fmt.Errorf("open the schedules: %w", err)
	}
	return s, nil
}

// withSchedules opens the schedules of db for a command, first making
// sure, read-only, that the database has them: a mistyped --db must not
// leave a new database or new tables behind. A database without them is
// an error wrapping errNoSchedules, prefix first.
func withSchedules(ctx context.Context, env Env, db database, prefix string, handlerOf handlerOf, f func(*schedule.Scheduler) error) error {
	ro, err := db.readOnly(ctx)
	if err != nil {
		return err
	}
	has, err := schedule.HasState(ctx, ro)
	_ = ro.Close()
	if err != nil {
		return fmt.Errorf("read %s: %w", db, err)
	}
	if !has {
		return fmt.Errorf("%s--db %s: %w", prefix, db, errNoSchedules)
	}
	w, err := db.open(ctx)
	if err != nil {
		return err
	}
	defer w.Close()
	handler, err := handlerOf(w)
	if err != nil {
		return err
	}
	s, err := openScheduler(ctx, env, w, handler)
	if err != nil {
		return err
	}
	return f(s)
}

// changeSchedule opens the schedules of db for a command on the schedule
// name (see withSchedules).
func changeSchedule(ctx context.Context, env Env, db database, name string, handler handlerOf, change func(*schedule.Scheduler) error) error {
	err := withSchedules(ctx, env, db, fmt.Sprintf("no schedule named %q: ", name), handler, change)
	if errors.Is(err, schedule.ErrUnknownSchedule) {
		return fmt.Errorf("no schedule named %q in %s (see \"ticker schedule list\")", name, db)
	}
	return err
}

// scheduleChangeCommand is pause, resume or delete: verb a schedule by
// its name, and say it is done.
func scheduleChangeCommand(env Env, verb, short, done string, change func(*schedule.Scheduler, context.Context, string) error) *cobra.Command {
	c := &cobra.Command{
		Use:   verb + " [--db passage.db] NAME",
		Short: short,
		Args:  oneSchedule,
	}
	dbf := addDB(c, env, "SQLite file or postgres:// DSN holding the schedule")
	c.ValidArgsFunction = completeSchedules(dbf)
	c.RunE = func(c *cobra.Command, args []string) error {
		db, err := dbf.database()
		if err != nil {
			return err
		}
		ctx, name := c.Context(), args[0]
		return changeSchedule(ctx, env, db, name, noRuns, func(s *schedule.Scheduler) error {
			if err := change(s, ctx, name); err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "%s %s\n", done, name)
			return nil
		})
	}
	return c
}
