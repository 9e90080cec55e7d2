package cli

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/passage-of-time/passage/internal/timefmt"
	"github.com/passage-of-time/passage/tick"
)

// previewConfig is "ticker preview" validated: the boundaries of unit
// in loc after from, n of them.
type previewConfig struct {
	unit tick.Unit
	loc  *time.Location
	from time.Time
	n    int
}

func previewCommand(env Env) *cobra.Command {
	c := &cobra.Command{
		Use:   "preview --unit day --tz Europe/Warsaw [--from T] [-n 10]",
		Short: "list the next boundaries of a unit in a time zone",
		Args:  noArgs,
	}
	unit := c.Flags().String("unit", "day", "unit: minute, hour, day, week, month, quarter or year")
	tz := addTZ(c, "IANA time zone the boundaries are computed in")
	from := c.Flags().String("from", "", "list the boundaries after this time, default now: "+timeRule)
	n := addCount(c, "boundaries")
	c.RunE = func(*cobra.Command, []string) error {
		var cfg previewConfig
		var err error
		if cfg.unit, err = tick.ParseUnit(*unit); err != nil {
			return usagef("--unit %q: %v", *unit, err)
		}
		if cfg.loc, err = tz.location(); err != nil {
			return err
		}
		if err := checkCount(*n); err != nil {
			return err
		}
		cfg.n = *n
		cfg.from = env.clock().Now().In(cfg.loc)
		if *from != "" {
			if cfg.from, err = parseTime("from", *from, cfg.loc); err != nil {
				return err
			}
		}
		return preview(env, cfg)
	}
	return c
}

// preview lists the boundaries cfg asks for, with their lengths and what
// is unusual about them.
func preview(env Env, cfg previewConfig) error {
	nextBoundary := env.next
	if nextBoundary == nil {
		nextBoundary = tick.Next
	}
	fmt.Fprintf(env.Stdout, "Next %d %s boundaries in %s after %s:\n", cfg.n, cfg.unit, cfg.loc, timefmt.Format(cfg.from))
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BOUNDARY\tWEEKDAY\tLENGTH\tNOTE")
	b := nextBoundary(cfg.unit, cfg.from, cfg.loc)
	for range cfg.n {
		if !readsBack(b) {
			fmt.Fprintf(env.Stderr, "no more boundaries: the next, %s, is after the last instant RFC 3339 can write (%s)\n",
				b.Format("2006-01-02 15:04 -07:00"), lastWritable)
			break
		}
		next := nextBoundary(cfg.unit, b, cfg.loc)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", timefmt.Format(b), b.Format("Mon"), next.Sub(b), note(b, next))
		b = next
	}
	return tw.Flush()
}

// lastWritable is the end of the years RFC 3339 writes: four digits.
const lastWritable = "year 9999"

// readsBack reports whether t, written by timefmt.Format, reads back
// (timefmt.Parse, --from): RFC 3339 has four-digit years, so an instant
// whose local year is past 9999 is written as 10000-01-01T00:00:00Z, which
// no RFC 3339 reader takes. The preview commands stop before one.
func readsBack(t time.Time) bool {
	y := t.Year()
	return y >= 0 && y <= 9999
}

// note explains boundaries an operator might not expect: a UTC offset change
// within the period, or a period that does not start at local midnight.
func note(b, next time.Time) string {
	_, off := b.Zone()
	_, nextOff := next.Zone()
	switch {
	case off != nextOff:
		return fmt.Sprintf("UTC offset changes %s → %s", offset(b), offset(next))
	case b.Hour() != 0 && (next.Sub(b) >= 23*time.Hour):
		return "local midnight does not exist; the period starts at " + b.Format("15:04")
	}
	return ""
}
