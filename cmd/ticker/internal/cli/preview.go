package cli

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/passage-of-time/passage/internal/timefmt"
	"github.com/passage-of-time/passage/tick"
)

func previewCommand(_ context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "preview", "--unit day --tz Europe/Warsaw [--from T] [-n 10]")
	unitName := fs.String("unit", "day", "unit: minute, hour, day, week, month, quarter or year")
	tz := fs.String("tz", "UTC", "IANA time zone the boundaries are computed in")
	from := fs.String("from", "", "list the boundaries after this time, default now: "+timeRule)
	n := fs.Int("n", 10, "how many boundaries to list (1–10000)")
	if err := parse(fs, args); err != nil {
		return err
	}
	unit, err := tick.ParseUnit(*unitName)
	if err != nil {
		return usagef("--unit %q: %v", *unitName, err)
	}
	loc, err := loadLocation(*tz)
	if err != nil {
		return err
	}
	if *n < 1 || *n > 10000 {
		return usagef("-n %d: must be between 1 and 10000", *n)
	}
	start := env.clock().Now().In(loc)
	if *from != "" {
		if start, err = parseTime("from", *from, loc); err != nil {
			return err
		}
	}

	nextBoundary := env.next
	if nextBoundary == nil {
		nextBoundary = tick.Next
	}
	fmt.Fprintf(env.Stdout, "Next %d %s boundaries in %s after %s:\n", *n, unit, loc, timefmt.Format(start))
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BOUNDARY\tWEEKDAY\tLENGTH\tNOTE")
	b := nextBoundary(unit, start, loc)
	for range *n {
		if !readsBack(b) {
			fmt.Fprintf(env.Stderr, "no more boundaries: the next, %s, is after the last instant RFC 3339 can write (%s)\n",
				b.Format("2006-01-02 15:04 -07:00"), lastWritable)
			break
		}
		next := nextBoundary(unit, b, loc)
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
