package schedule

import (
	"fmt"
	"strings"
	"time"

	"github.com/teambition/rrule-go"
)

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
	case c.Count > 0 && !c.Until.IsZero():
		return bad("Count %d and Until %s: the recurrence ends by one or the other (RFC 5545 forbids both in a rule)", c.Count, c.Until.Format(time.RFC3339))
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
