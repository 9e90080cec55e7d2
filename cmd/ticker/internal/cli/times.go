package cli

import (
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/passage-of-time/passage/internal/timefmt"
)

// Reading the time flags (--tz, --from, --until, --before, --to) by one
// rule, so that every command reads a local time the same way.

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

// losslessTimes prints the times in log records with timefmt.Format:
// slog's own format drops an offset's seconds.
func losslessTimes(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindTime {
		return slog.String(a.Key, timefmt.Format(a.Value.Time()))
	}
	return a
}
