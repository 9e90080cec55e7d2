package schedule

import (
	"time"

	"github.com/teambition/rrule-go"

	"github.com/passage-of-time/passage/internal/zone"
)

// expansion is one RRULE line, expanded on the floating wall clock.
type expansion struct {
	// opt is the rule from DTSTART, with the parts rrule-go would take from
	// DTSTART written out (BYHOUR, BYMINUTE, BYSECOND, BYMONTHDAY, BYMONTH,
	// BYDAY), so that the same rule from a later start has the same
	// occurrences; its UNTIL is widened by untilSlack (until bounds it).
	opt        rrule.ROption
	full       *rrule.RRule // opt from DTSTART
	until      time.Time    // UNTIL, as an instant; zero: none
	exclusions              // the recurrence's EXDATEs
}

// rruleHorizon bounds the search for a rule's next occurrence, and for
// its first, in years.
const rruleHorizon = 400

// untilSlack is how far past UNTIL's wall time an occurrence's wall time
// may be and still be placed at or before UNTIL (a UTC UNTIL in a repeated
// hour's second pass, an occurrence in its first): any zone's offsets are
// less than this apart.
const untilSlack = 2 * zone.MaxOffset

// newExpansion reads an RRULE line of a rule starting at the wall time
// start in loc.
func newExpansion(line string, start time.Time, loc *time.Location, ex exclusions) (expansion, error) {
	opt, err := rrule.StrToROptionInLocation(line[len("RRULE:"):], loc)
	if err != nil {
		return expansion{}, err
	}
	if err := countAndUntil(line); err != nil {
		return expansion{}, err
	}
	opt.Dtstart = start
	e := expansion{exclusions: ex}
	if opt.Until.IsZero() {
		// rrule-go ends a rule without UNTIL at DTSTART plus the largest
		// time.Duration, about 292 years, which cut a COUNT that reaches
		// further (COUNT=400 yearly): noUntil is past any occurrence
		// Next looks for.
		opt.Until = noUntil
	} else {
		e.until = readUntil(line, opt.Until, loc)
		opt.Until = time.Unix(wallOf(e.until, loc)+untilSlack, 0).UTC()
	}
	pinDefaults(opt)
	if e.full, err = rrule.NewRRule(*opt); err != nil {
		return expansion{}, err
	}
	e.opt = *opt
	return e, nil
}

// noUntil is the UNTIL given to rrule-go for a rule without one: the last
// second of year 9999, the last year RFC 5545 can write (its dates have
// four digits).
var noUntil = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)

// pinDefaults writes out the parts rrule-go takes from DTSTART when a rule
// leaves them out (as python-dateutil does).
func pinDefaults(opt *rrule.ROption) {
	s := opt.Dtstart
	if len(opt.Byweekno) == 0 && len(opt.Byyearday) == 0 && len(opt.Bymonthday) == 0 && len(opt.Byweekday) == 0 && len(opt.Byeaster) == 0 {
		switch opt.Freq {
		case rrule.YEARLY:
			if len(opt.Bymonth) == 0 {
				opt.Bymonth = []int{int(s.Month())}
			}
			opt.Bymonthday = []int{s.Day()}
		case rrule.MONTHLY:
			opt.Bymonthday = []int{s.Day()}
		case rrule.WEEKLY:
			opt.Byweekday = []rrule.Weekday{weekdays[s.Weekday()]}
		}
	}
	if len(opt.Byhour) == 0 && opt.Freq < rrule.HOURLY {
		opt.Byhour = []int{s.Hour()}
	}
	if len(opt.Byminute) == 0 && opt.Freq < rrule.MINUTELY {
		opt.Byminute = []int{s.Minute()}
	}
	if len(opt.Bysecond) == 0 && opt.Freq < rrule.SECONDLY {
		opt.Bysecond = []int{s.Second()}
	}
}

// from returns the rule expanded from a start at most a period before the
// wall time w, with the occurrences the rule from DTSTART has from w on:
// a whole number of periods (INTERVAL × FREQ) after DTSTART, where the
// rule is in the same phase, minus one period so that the start's own
// period, which the expansion cuts at the start, ends before w. A rule
// with COUNT counts from DTSTART, so it starts there.
func (e expansion) from(w time.Time) *rrule.RRule {
	start := e.opt.Dtstart
	if e.opt.Count > 0 || !w.After(start) {
		return e.full
	}
	interval := max(e.opt.Interval, 1)
	var rebased time.Time
	switch e.opt.Freq {
	case rrule.YEARLY:
		k := (w.Year()-start.Year())/interval - 1
		rebased = time.Date(start.Year()+k*interval, 1, 1, 0, 0, 0, 0, time.UTC)
	case rrule.MONTHLY:
		months := (w.Year()-start.Year())*12 + int(w.Month()-start.Month())
		k := months/interval - 1
		rebased = time.Date(start.Year(), start.Month()+time.Month(k*interval), 1, 0, 0, 0, 0, time.UTC)
	default:
		unit := map[rrule.Frequency]int64{rrule.WEEKLY: 7 * 86400, rrule.DAILY: 86400, rrule.HOURLY: 3600, rrule.MINUTELY: 60, rrule.SECONDLY: 1}[e.opt.Freq]
		period := unit * int64(interval)
		k := (w.Unix()-start.Unix())/period - 1
		rebased = time.Unix(start.Unix()+k*period, 0).UTC()
	}
	if !rebased.After(start) {
		return e.full
	}
	opt := e.opt
	opt.Dtstart = rebased
	if limit := w.AddDate(rruleHorizon, 0, 0); opt.Until.After(limit) {
		// next looks no further; a rule that goes long without an
		// occurrence stops here rather than at noUntil.
		opt.Until = limit
	}
	r, err := rrule.NewRRule(opt)
	if err != nil {
		return e.full // cannot be: the same options read before
	}
	return r
}

var weekdays = map[time.Weekday]rrule.Weekday{
	time.Monday: rrule.MO, time.Tuesday: rrule.TU, time.Wednesday: rrule.WE, time.Thursday: rrule.TH,
	time.Friday: rrule.FR, time.Saturday: rrule.SA, time.Sunday: rrule.SU,
}
