package schedule

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/teambition/rrule-go"
)

// check rejects a rule without an occurrence within rruleHorizon years of
// start (or before its UNTIL).
func (e expansion) check(start time.Time, loc *time.Location) error {
	limit := start.AddDate(rruleHorizon, 0, 0)
	opt := e.opt
	if opt.Until.IsZero() || opt.Until.After(limit) {
		opt.Until = limit
	}
	if why := unreachable(e.opt); why != "" {
		// rrule-go would look for such an hour, minute or second forever.
		return fmt.Errorf("the rule has no occurrence: %s", why)
	}
	if days, ok := daysOnly(e.opt, limit); ok {
		// Cheap: a year at a time rather than a day or a minute.
		if _, found := days.Iterator()(); !found {
			return fmt.Errorf("the rule has no occurrence before %s (%d years after DTSTART): no day passes its BYxxx parts%s", limit.Format(rrule.LocalDateTimeFormat), rruleHorizon, neverMeet(e.opt))
		}
	}
	r, err := rrule.NewRRule(opt)
	if err != nil {
		return err
	}
	next := r.Iterator()
	for w, ok := next(); ok; w, ok = next() {
		if e.until.IsZero() || !resolveRFC5545(w.Unix(), loc).After(e.until) {
			return nil
		}
	}
	why := fmt.Sprintf("before %s (%d years after DTSTART)", limit.Format(rrule.LocalDateTimeFormat), rruleHorizon)
	if !e.until.IsZero() && e.until.Before(resolveRFC5545(limit.Unix(), loc)) {
		why = fmt.Sprintf("from DTSTART %s to UNTIL %s", start.Format(rrule.LocalDateTimeFormat), e.until.UTC().Format(rrule.DateTimeFormat))
	}
	return fmt.Errorf("the rule has no occurrence %s%s", why, neverMeet(e.opt))
}

// unreachable says why a rule finer than daily never reaches a time of
// day its BYHOUR, BYMINUTE and BYSECOND allow, or returns "": its steps
// (INTERVAL hours, minutes or seconds from DTSTART) reach only the times
// of day DTSTART's is congruent to, modulo the greatest common divisor of
// INTERVAL and the units in a day (python-dateutil rejects the same).
func unreachable(opt rrule.ROption) string {
	unit, base := 0, 0
	switch opt.Freq {
	case rrule.HOURLY:
		unit, base = 3600, 24
	case rrule.MINUTELY:
		unit, base = 60, 24*60
	case rrule.SECONDLY:
		unit, base = 1, 24*3600
	default:
		return ""
	}
	g := gcd(max(opt.Interval, 1), base)
	s := opt.Dtstart
	u0 := (s.Hour()*3600 + s.Minute()*60 + s.Second()) / unit
	allows := func(xs []int, v int) bool { return len(xs) == 0 || slices.Contains(xs, v) }
	for u := u0 % g; u < base; u += g {
		sec := u * unit
		if allows(opt.Byhour, sec/3600) && (opt.Freq < rrule.MINUTELY || allows(opt.Byminute, sec/60%60)) && (opt.Freq < rrule.SECONDLY || allows(opt.Bysecond, sec%60)) {
			return ""
		}
	}
	var parts []string
	for _, p := range []struct {
		name string
		xs   []int
		freq rrule.Frequency
	}{{"BYHOUR", opt.Byhour, rrule.HOURLY}, {"BYMINUTE", opt.Byminute, rrule.MINUTELY}, {"BYSECOND", opt.Bysecond, rrule.SECONDLY}} {
		if len(p.xs) > 0 && opt.Freq >= p.freq {
			parts = append(parts, p.name+"="+ints(p.xs))
		}
	}
	return fmt.Sprintf("FREQ=%s;INTERVAL=%d from DTSTART %s never reaches %s", opt.Freq, max(opt.Interval, 1), s.Format(rrule.LocalDateTimeFormat), strings.Join(parts, ";"))
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// daysOnly returns, for a rule of FREQ=WEEKLY or finer whose BYxxx parts
// choose days (beyond BYMONTH), a yearly rule with the same day parts up
// to limit: the rule has an occurrence only if it does. Its expansion
// steps a year at a time, where the rule's own steps a day or less.
func daysOnly(opt rrule.ROption, limit time.Time) (*rrule.RRule, bool) {
	if opt.Freq < rrule.WEEKLY || len(opt.Byweekno) == 0 && len(opt.Byyearday) == 0 && len(opt.Bymonthday) == 0 && len(opt.Byweekday) == 0 && len(opt.Byeaster) == 0 {
		return nil, false
	}
	days := rrule.ROption{
		Freq: rrule.YEARLY, Dtstart: opt.Dtstart, Until: limit, Wkst: opt.Wkst,
		Bymonth: opt.Bymonth, Bymonthday: opt.Bymonthday, Byyearday: opt.Byyearday, Byweekno: opt.Byweekno, Byeaster: opt.Byeaster,
		Byhour: []int{23}, Byminute: []int{59}, Bysecond: []int{59},
	}
	plain := []rrule.Weekday{rrule.MO, rrule.TU, rrule.WE, rrule.TH, rrule.FR, rrule.SA, rrule.SU}
	for _, wd := range opt.Byweekday {
		days.Byweekday = append(days.Byweekday, plain[wd.Day()]) // finer than monthly: any such weekday
	}
	r, err := rrule.NewRRule(days)
	return r, err == nil
}

// neverMeet names the parts of a rule that cannot meet, where it can tell.
func neverMeet(opt rrule.ROption) string {
	if len(opt.Bymonth) == 0 || len(opt.Bymonthday) == 0 {
		return ""
	}
	for _, m := range opt.Bymonth {
		days := time.Date(2000, time.Month(m)+1, 0, 0, 0, 0, 0, time.UTC).Day() // a leap year: the most
		for _, d := range opt.Bymonthday {
			if d <= days && -d <= days {
				return ""
			}
		}
	}
	return fmt.Sprintf(": BYMONTHDAY=%s falls in none of the months BYMONTH=%s", ints(opt.Bymonthday), ints(opt.Bymonth))
}

func ints(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}
