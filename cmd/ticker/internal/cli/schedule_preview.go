package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/passage-of-time/passage/internal/timefmt"
	"github.com/passage-of-time/passage/schedule"
)

// specPreview is "ticker schedule preview" validated: the fire instants
// of spec after from, n of them.
type specPreview struct {
	spec schedule.Spec
	from time.Time
	n    int
}

func schedulePreviewCommand(env Env) *cobra.Command {
	c := &cobra.Command{
		Use:   "preview --spec SPEC | --spec-file FILE [--tz ZONE] [--from T] [-n 10]",
		Short: "list the next fire instants of a schedule spec",
		Args:  noArgs,
	}
	spec := addSpec(c)
	tz := addTZ(c, "IANA time zone of a cron expression or a floating DTSTART")
	from := c.Flags().String("from", "", "list the fire instants after this time, default now: "+timeRule)
	n := addCount(c, "fire instants")
	c.RunE = func(*cobra.Command, []string) error {
		if err := checkCount(*n); err != nil {
			return err
		}
		loc, err := tz.location()
		if err != nil {
			return err
		}
		cfg := specPreview{n: *n, from: env.clock().Now().In(loc)}
		zone, err := tz.specZone()
		if err != nil {
			return err
		}
		if cfg.spec, err = spec.parse(zone); err != nil {
			return err
		}
		if *from != "" {
			if cfg.from, err = parseTime("from", *from, loc); err != nil {
				return err
			}
		}
		previewSpec(env, cfg)
		return nil
	}
	return c
}

// previewSpec lists the fire instants cfg asks for, one a line, the
// instant first, its offset exact to the second (timefmt.Format), so the
// output reads back losslessly.
func previewSpec(env Env, cfg specPreview) {
	at := cfg.spec.Next(cfg.from)
	for range cfg.n {
		switch {
		case at.IsZero():
			fmt.Fprintln(env.Stderr, "the schedule has no more fire instants")
			return
		case !readsBack(at):
			fmt.Fprintf(env.Stderr, "no more fire instants listed: the next, %s, is after the last instant RFC 3339 can write (%s)\n",
				at.Format("2006-01-02 15:04 -07:00"), lastWritable)
			return
		}
		fmt.Fprintf(env.Stdout, "%s  %s\n", timefmt.Format(at), at.Format("Mon"))
		at = cfg.spec.Next(at)
	}
	if at.IsZero() {
		fmt.Fprintln(env.Stderr, "the schedule has no more fire instants")
	}
}
