package schedule

import (
	"fmt"
	"strings"
	"time"

	"github.com/teambition/rrule-go"

	"github.com/passage-of-time/passage/internal/zone"
)

// RRule returns the slots of an iCalendar recurrence (RFC 5545): a
// DTSTART line (with TZID=, UTC "Z", or floating: then in loc, nil meaning
// UTC), RRULE lines (FREQ, INTERVAL, COUNT, UNTIL, BYxxx, WKST, and
// BYEASTER), and RDATE and EXDATE lines, one property per line. It is read
// and expanded by github.com/teambition/rrule-go, a port of
// python-dateutil's rrule, the reference implementation most others are
// checked against.
//
// Local times follow RFC 5545: one the clock jumps over is read with the
// offset before the jump (02:30 in a spring-forward gap is 03:30), one
// that occurs twice is its first occurrence — also for FREQ=HOURLY and
// finer, which step the wall clock, not absolute time (use Every for that).
func RRule(text string, loc *time.Location) (Spec, error) {
	if loc == nil {
		loc = time.UTC
	}
	var lines, rules, dates []string
	var dtstart string
	for _, line := range strings.Split(strings.ReplaceAll(text, `\n`, "\n"), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		lines = append(lines, line)
		switch name := strings.ToUpper(line[:strings.IndexAny(line+":", ":;")]); name {
		case "DTSTART":
			if dtstart != "" {
				return nil, fmt.Errorf("%w: recurrence line %q: a second DTSTART", ErrInvalidSpec, line)
			}
			dtstart = line
		case "RRULE":
			rules = append(rules, line)
		case "RDATE", "EXDATE":
			dates = append(dates, line)
		case "EXRULE":
			return nil, fmt.Errorf("%w: recurrence line %q: EXRULE is deprecated by RFC 5545; list EXDATEs or use Except", ErrInvalidSpec, line)
		default:
			return nil, fmt.Errorf("%w: recurrence line %q: not DTSTART, RRULE, RDATE or EXDATE", ErrInvalidSpec, line)
		}
	}
	if dtstart == "" {
		return nil, fmt.Errorf("%w: recurrence %q: no DTSTART line (the first slot and its zone, e.g. DTSTART;TZID=Europe/Warsaw:20260101T093000)", ErrInvalidSpec, text)
	}
	zone, start, err := readDTStart(dtstart, loc)
	if err != nil {
		return nil, err
	}
	// The spec's text names its zone, so that it reads back the same
	// without loc (a stored schedule is read back that way).
	if !strings.Contains(strings.ToUpper(dtstart), "TZID=") && !strings.HasSuffix(dtstart, "Z") {
		for i, line := range lines {
			if line == dtstart {
				lines[i] = fmt.Sprintf("DTSTART;TZID=%s:%s", zone, start.Format(rrule.LocalDateTimeFormat))
			}
		}
	}
	if len(rules) == 0 {
		rules = []string{""} // RDATEs alone
	}
	// Occurrences are expanded by rrule-go on a floating wall clock (UTC,
	// where every local time exists once) and each is then placed in the
	// zone by RFC 5545's rule. rrule-go's own placement goes through
	// time.Date, which reads a time in a gap with the offset before it east
	// of UTC but after it west of UTC, and a repeated time as its second
	// occurrence. rrule-go's Set holds one RRULE (a second replaces the
	// first), so each RRULE line is a set of its own and the spec is
	// their union.
	spec := rruleSpec{loc: zone, text: strings.Join(lines, "\n")}
	for _, rule := range rules {
		set := &rrule.Set{}
		set.DTStart(start)
		if rule != "" {
			opt, err := rrule.StrToROptionInLocation(rule[len("RRULE:"):], zone)
			if err != nil {
				return nil, fmt.Errorf("%w: recurrence line %q: %v", ErrInvalidSpec, rule, err)
			}
			opt.Dtstart = start
			if !opt.Until.IsZero() {
				opt.Until = asWall(opt.Until, zone)
			}
			r, err := rrule.NewRRule(*opt)
			if err != nil {
				return nil, fmt.Errorf("%w: recurrence line %q: %v", ErrInvalidSpec, rule, err)
			}
			set.RRule(r)
		}
		for _, line := range dates {
			name, value, _ := strings.Cut(line, ";")
			if !strings.Contains(name, ":") {
				value = strings.TrimPrefix(value, "VALUE=DATE-TIME;")
			} else {
				name, value, _ = strings.Cut(line, ":")
			}
			walls, instants, err := readDates(value, zone)
			if err != nil {
				return nil, fmt.Errorf("%w: recurrence line %q: %v", ErrInvalidSpec, line, err)
			}
			rdate := strings.EqualFold(name, "RDATE")
			for _, w := range walls {
				if rdate {
					set.RDate(w)
				} else {
					set.ExDate(w)
				}
			}
			for _, at := range instants {
				if rdate {
					spec.rdates = append(spec.rdates, at)
				} else {
					set.ExDate(asWall(at, zone)) // an instant's wall time: its occurrence
				}
			}
		}
		spec.sets = append(spec.sets, set)
	}
	return spec, nil
}

// readDates reads an RDATE or EXDATE value, "[TZID=Zone:]t1,t2,…". A
// local time in the rule's own zone (no TZID, or the same one) is a wall
// time on the floating wall clock, taken as it is written — never through
// time.Date, which would move a time in a gap — so it matches the rule's
// occurrence of the same wall time. A UTC time (…Z) or one in another
// zone is an instant, kept as one: a wall time could not tell the two
// passes of a repeated hour apart.
func readDates(value string, zone *time.Location) (walls, instants []time.Time, err error) {
	in := zone
	if rest, ok := strings.CutPrefix(value, "TZID="); ok {
		name, times, found := strings.Cut(rest, ":")
		if !found {
			return nil, nil, fmt.Errorf("TZID %q is not followed by a time", rest)
		}
		l, err := time.LoadLocation(name)
		if err != nil {
			return nil, nil, fmt.Errorf("TZID %s is not a time zone of the zone database", name)
		}
		in, value = l, times
	}
	for _, v := range strings.Split(value, ",") {
		local, utc := strings.CutSuffix(strings.TrimSpace(v), "Z")
		t, err := time.Parse(rrule.LocalDateTimeFormat, local)
		if err != nil {
			return nil, nil, fmt.Errorf("%s is not a date and time such as 20260101T093000", v)
		}
		switch {
		case utc:
			instants = append(instants, t)
		case in.String() != zone.String():
			instants = append(instants, resolveRFC5545(t.Unix(), in))
		default:
			walls = append(walls, t)
		}
	}
	return walls, instants, nil
}

// readDTStart returns DTSTART's zone (its TZID, UTC for a time ending in
// Z, loc for a floating time) and its local date and time on the floating
// wall clock.
func readDTStart(line string, loc *time.Location) (*time.Location, time.Time, error) {
	params, value, ok := strings.Cut(line, ":")
	if !ok {
		return nil, time.Time{}, fmt.Errorf("%w: recurrence line %q: no value after DTSTART", ErrInvalidSpec, line)
	}
	zone := loc
	for _, p := range strings.Split(params, ";")[1:] {
		if name, ok := strings.CutPrefix(p, "TZID="); ok {
			z, err := time.LoadLocation(name)
			if err != nil {
				return nil, time.Time{}, fmt.Errorf("%w: recurrence line %q: TZID %s is not a time zone of the zone database", ErrInvalidSpec, line, name)
			}
			zone = z
		} else if p != "VALUE=DATE-TIME" {
			return nil, time.Time{}, fmt.Errorf("%w: recurrence line %q: parameter %s is not supported (TZID is)", ErrInvalidSpec, line, p)
		}
	}
	if v, utc := strings.CutSuffix(value, "Z"); utc {
		t, err := time.Parse(rrule.LocalDateTimeFormat, v)
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("%w: recurrence line %q: %s is not a date and time such as 20260101T093000", ErrInvalidSpec, line, value)
		}
		return time.UTC, t, nil
	}
	t, err := time.Parse(rrule.LocalDateTimeFormat, value)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("%w: recurrence line %q: %s is not a date and time such as 20260101T093000", ErrInvalidSpec, line, value)
	}
	return zone, t, nil
}

// asWall returns t's local date and time in loc on the floating wall clock.
func asWall(t time.Time, loc *time.Location) time.Time {
	return time.Unix(wallOf(t, loc), 0).UTC()
}

type rruleSpec struct {
	sets   []*rrule.Set // on the floating wall clock
	rdates []time.Time  // RDATEs given as instants (UTC or another zone)
	loc    *time.Location
	text   string
}

func (r rruleSpec) String() string { return r.text }

// rruleHorizon bounds the search for a rule's next occurrence, in years.
const rruleHorizon = 400

func (r rruleSpec) Next(t time.Time) time.Time {
	var best time.Time
	for _, set := range r.sets {
		if n := r.next(set, t); !n.IsZero() && (best.IsZero() || n.Before(best)) {
			best = n
		}
	}
	for _, at := range r.rdates {
		if at.After(t) && (best.IsZero() || at.Before(best)) {
			best = at.In(r.loc)
		}
	}
	return best
}

// next looks for the set's first occurrence after t in windows of wall
// times that double in length. A wall time w stands for an instant within
// zone.MaxOffset of w, and RFC 5545's placement is not monotonic (02:30 in
// a gap becomes 03:30, after 03:15), so a window is done only when its
// end is that far past the best instant found.
func (r rruleSpec) next(set *rrule.Set, t time.Time) time.Time {
	from := time.Unix(t.Unix()-zone.MaxOffset, 0).UTC()
	span := 2 * 24 * time.Hour
	horizon := from.AddDate(rruleHorizon, 0, 0)
	var best time.Time
	for from.Before(horizon) {
		to := from.Add(span)
		for _, w := range set.Between(from, to, true) {
			at := resolveRFC5545(w.Unix(), r.loc)
			if at.After(t) && (best.IsZero() || at.Before(best)) {
				best = at
			}
		}
		switch {
		case !best.IsZero() && to.Unix()-zone.MaxOffset > best.Unix():
			return best
		case best.IsZero() && set.After(to, false).IsZero():
			return time.Time{} // the rule has ended
		}
		from, span = to, span*2
	}
	return best
}

// Frequency is the period a Calendar repeats on.
type Frequency int

// The periods of a Calendar.
const (
	Daily Frequency = iota + 1
	Weekly
	Monthly
	Yearly
)

// ShortMonths says what a monthly day past the end of a month does.
type ShortMonths int

const (
	// SkipShortMonths leaves such months out, as RFC 5545 does: the 31st
	// every month fires in the seven months that have one; every 3 months
	// on the 31st from January fires in January and July only.
	SkipShortMonths ShortMonths = iota
	// LastDayOfShortMonths moves the slot to the month's last day: the 31st
	// fires on Apr 30 and Feb 28 (29 in leap years).
	LastDayOfShortMonths
)

// Clock is a time of day.
type Clock struct{ Hour, Minute, Second int }

// At returns the time of day hour:minute:00.
func At(hour, minute int) Clock { return Clock{Hour: hour, Minute: minute} }

func (c Clock) String() string { return fmt.Sprintf("%02d:%02d:%02d", c.Hour, c.Minute, c.Second) }

// Calendar describes the calendar recurrences people ask for — every N
// days, weeks, months or years, on weekdays, the nth or last weekday of
// the month, days of the month, at times of day — and builds them as RFC
// 5545 rules (RRule), so they resolve DST the same way.
type Calendar struct {
	// Every is the period; required.
	Every Frequency
	// Interval repeats every Interval periods; 0 means 1.
	Interval int
	// Start is the first period's date and, without At, the time of day;
	// its location is the schedule's zone. Required.
	Start time.Time
	// At lists the times of day; none means Start's.
	At []Clock
	// Weekdays restricts the slots to these days of the week (Weekly:
	// which days; Monthly or Yearly with Nth: which weekday).
	Weekdays []time.Weekday
	// Nth picks, with Monthly and one weekday, the nth such weekday of the
	// month (1 to 5) or, counted from the end, -1 (the last) to -5.
	Nth int
	// MonthDays lists days of the month: 1 to 31, or -1 (the last) to -31.
	MonthDays []int
	// Months restricts the slots to these months (Yearly: which months;
	// none means Start's month).
	Months []time.Month
	// ShortMonths says what a day of the month past a month's end does;
	// the default skips the month (RFC 5545).
	ShortMonths ShortMonths
	// Count ends the recurrence after this many slots; 0 means no limit.
	Count int
	// Until ends the recurrence at this instant (inclusive); zero means no end.
	Until time.Time
}

// Spec validates c and returns its slots.
func (c Calendar) Spec() (Spec, error) {
	bad := func(format string, args ...any) (Spec, error) {
		return nil, fmt.Errorf("%w: calendar: "+format, append([]any{ErrInvalidSpec}, args...)...)
	}
	freq, ok := map[Frequency]rrule.Frequency{Daily: rrule.DAILY, Weekly: rrule.WEEKLY, Monthly: rrule.MONTHLY, Yearly: rrule.YEARLY}[c.Every]
	switch {
	case !ok:
		return bad("Every %d is not Daily, Weekly, Monthly or Yearly", c.Every)
	case c.Start.IsZero():
		return bad("Start is the zero time (it gives the first period and the zone)")
	case c.Interval < 0:
		return bad("Interval %d is negative", c.Interval)
	case c.Count < 0:
		return bad("Count %d is negative", c.Count)
	case c.Nth != 0 && (c.Nth < -5 || c.Nth > 5 || len(c.Weekdays) != 1 || (c.Every != Monthly && c.Every != Yearly)):
		return bad("Nth %d needs one weekday, Every Monthly or Yearly, and a value from -5 to 5 (not 0)", c.Nth)
	case c.ShortMonths == LastDayOfShortMonths && (len(c.MonthDays) != 1 || c.MonthDays[0] < 1):
		return bad("LastDayOfShortMonths needs exactly one positive day of the month, got %v", c.MonthDays)
	case c.ShortMonths == LastDayOfShortMonths && c.Every != Monthly:
		return bad("LastDayOfShortMonths needs Every Monthly (it picks one day per month), got Every %d", c.Every)
	}
	for _, d := range c.MonthDays {
		if d == 0 || d < -31 || d > 31 {
			return bad("day of the month %d is outside 1..31 and -31..-1", d)
		}
	}
	for _, m := range c.Months {
		if m < time.January || m > time.December {
			return bad("month %d is outside 1..12", m)
		}
	}
	at := c.At
	if len(at) == 0 {
		h, m, s := c.Start.Clock()
		at = []Clock{{h, m, s}}
	}
	for _, a := range at {
		if a.Hour < 0 || a.Hour > 23 || a.Minute < 0 || a.Minute > 59 || a.Second < 0 || a.Second > 59 {
			return bad("time of day %s is not a time of day", a)
		}
	}
	if c.Count > 0 && len(at) > 1 {
		return bad("Count with several times of day would count each time of day on its own; give one time of day, or Until")
	}
	loc := c.Start.Location()
	y, mo, d := c.Start.Date()
	lines := []string{fmt.Sprintf("DTSTART;TZID=%s:%s", loc, time.Date(y, mo, d, at[0].Hour, at[0].Minute, at[0].Second, 0, time.UTC).Format(rrule.LocalDateTimeFormat))}
	// One rule per time of day: BYHOUR and BYMINUTE multiply (9:30 and
	// 17:00 would also give 9:00 and 17:30).
	for _, a := range at {
		opt := rrule.ROption{
			Freq:     freq,
			Interval: max(c.Interval, 1),
			Count:    c.Count,
			Until:    c.Until,
			Byhour:   []int{a.Hour},
			Byminute: []int{a.Minute},
			Bysecond: []int{a.Second},
		}
		for _, m := range c.Months {
			opt.Bymonth = append(opt.Bymonth, int(m))
		}
		if c.Every == Yearly && len(c.Months) == 0 {
			// RFC 5545 takes DTSTART's month only when a rule has no BYxxx
			// part at all; the doc promises Start's month either way.
			opt.Bymonth = []int{int(mo)}
		}
		for _, wd := range c.Weekdays {
			w := weekdays[wd]
			if c.Nth != 0 {
				w = w.Nth(c.Nth)
			}
			opt.Byweekday = append(opt.Byweekday, w)
		}
		opt.Bymonthday = c.MonthDays
		if c.ShortMonths == LastDayOfShortMonths && c.MonthDays[0] > 28 {
			// The day itself where the month has it, else the last day: the
			// last existing of 28..day.
			opt.Bymonthday = nil
			for day := 28; day <= c.MonthDays[0]; day++ {
				opt.Bymonthday = append(opt.Bymonthday, day)
			}
			opt.Bysetpos = []int{-1}
		}
		lines = append(lines, "RRULE:"+opt.RRuleString())
	}
	return RRule(strings.Join(lines, "\n"), loc)
}

var weekdays = map[time.Weekday]rrule.Weekday{
	time.Monday: rrule.MO, time.Tuesday: rrule.TU, time.Wednesday: rrule.WE, time.Thursday: rrule.TH,
	time.Friday: rrule.FR, time.Saturday: rrule.SA, time.Sunday: rrule.SU,
}
