package schedule

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/teambition/rrule-go"

	"github.com/passage-of-time/passage/internal/zone"
)

// RRule returns the slots of an iCalendar recurrence (RFC 5545): a
// DTSTART line (with TZID=, UTC "Z", or floating: then in loc, nil meaning
// UTC), RRULE lines (FREQ, INTERVAL, COUNT, UNTIL, BYxxx, WKST, and
// BYEASTER), and RDATE and EXDATE lines (TZID= and VALUE=DATE-TIME
// parameters; EXDATE also VALUE=DATE), one property per line, in any
// order. It is read and expanded by github.com/teambition/rrule-go, a
// port of python-dateutil's rrule, the reference implementation most
// others are checked against.
//
// An EXDATE removes the occurrences it names (RFC 5545 §3.8.5.1), the
// rules' and the RDATEs' alike:
//
//   - A time in UTC (…Z) or with the TZID of a zone other than DTSTART's
//     names an instant, and removes the occurrence at that instant in
//     whatever zone that is written: with DTSTART in Europe/Warsaw,
//     EXDATE:20260301T080000Z removes the rule's 09:00 on March 1, and
//     EXDATE;TZID=America/New_York:20260310T040000 its 09:00 on March 10.
//   - A local time of DTSTART's zone (floating, or with DTSTART's TZID)
//     names that wall time: it removes the occurrences of that wall time
//     (the rules' and the RDATEs written in DTSTART's zone), and an RDATE
//     written in UTC or another zone at the instant the wall time stands
//     for (placed as below): EXDATE;TZID=Europe/Warsaw:20260301T090000
//     removes RDATE:20260301T080000Z. Two wall times placed at one instant
//     stay apart: 02:30 in a spring-forward gap removes an hourly rule's
//     02:30, not its 03:30 placed at the same instant (an EXDATE in UTC
//     removes both).
//   - VALUE=DATE (no TZID) removes the occurrences on that date in
//     DTSTART's zone: those written as its local times by the date of
//     their wall time, an RDATE in UTC or another zone by the local date
//     of its instant.
//
// Local times follow RFC 5545: one the clock jumps over is read with the
// offset before the jump (02:30 in a spring-forward gap is 03:30), one
// that occurs twice is its first occurrence — also for FREQ=HOURLY and
// finer, which step the wall clock, not absolute time (use Every for that).
// UNTIL bounds the occurrences by the instants they are placed at: a UTC
// UNTIL in the second pass of a repeated hour keeps the occurrences placed
// in the first pass before it, and one just after a gap drops the gap's
// occurrences, placed after it. A floating UNTIL is placed as an
// occurrence would be.
//
// A recurrence that has no occurrence is rejected, naming what is wrong,
// since it would give a schedule that never fires. A rule that has no
// occurrence within 400 years of DTSTART (nor before its UNTIL) — BYxxx
// parts that never meet (FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30,
// BYMONTH=4;BYMONTHDAY=31), or a first occurrence further away than that
// — adds none to the set: beside an RDATE or another rule that has
// occurrences it is kept in the text and the set fires at those; alone it
// is rejected, naming the rule. So is a set whose EXDATEs remove every
// occurrence, and one with no RRULE or RDATE. A rule part that means
// nothing is rejected too: COUNT below 1, and COUNT with UNTIL (RFC 5545
// §3.3.10: they "MUST NOT occur in the same 'recur'"). COUNT counts
// however far the occurrences reach (COUNT=400 yearly is 400 years).
//
// Next costs about the same however long ago DTSTART was: the expansion
// starts a whole number of the rule's periods (INTERVAL × FREQ) before the
// instant asked about, where the rule is in the same phase as from
// DTSTART. A rule with COUNT cannot start anywhere but at DTSTART (COUNT
// counts from there): its Next walks the occurrences since DTSTART, at
// most COUNT of them.
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
		switch name := propertyName(line); name {
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
	// Occurrences are expanded by rrule-go on a floating wall clock (UTC,
	// where every local time exists once) and each is then placed in the
	// zone by RFC 5545's rule. rrule-go's own placement goes through
	// time.Date, which reads a time in a gap with the offset before it east
	// of UTC but after it west of UTC, and a repeated time as its second
	// occurrence. rrule-go's Set holds one RRULE (a second replaces the
	// first), so each RRULE line is an expansion of its own and the spec
	// is their union.
	spec := rruleSpec{loc: zone, text: strings.Join(lines, "\n")}
	ex := exclusions{exdates: map[int64]bool{}, placed: map[int64]bool{}, instants: map[int64]bool{}, days: map[int64]bool{}}
	var rdateWalls, rdateInstants []time.Time
	for _, line := range dates {
		d, err := readDates(line, zone)
		if err != nil {
			return nil, fmt.Errorf("%w: recurrence line %q: %v", ErrInvalidSpec, line, err)
		}
		if d.rdate {
			rdateWalls = append(rdateWalls, d.walls...)
			rdateInstants = append(rdateInstants, d.instants...)
			continue
		}
		for _, w := range d.walls {
			ex.exdates[w.Unix()] = true
			ex.placed[resolveRFC5545(w.Unix(), zone).Unix()] = true
		}
		for _, at := range d.instants {
			ex.instants[at.Unix()] = true
		}
		for _, day := range d.days {
			ex.days[day] = true
		}
	}
	for _, w := range rdateWalls {
		if at := resolveRFC5545(w.Unix(), zone); !ex.excludesWall(w.Unix(), at) {
			spec.dates = append(spec.dates, at)
		}
	}
	for _, at := range rdateInstants {
		if !ex.excludesInstant(at, zone) {
			spec.dates = append(spec.dates, at)
		}
	}
	slices.SortFunc(spec.dates, time.Time.Compare)
	spec.dates = slices.CompactFunc(spec.dates, time.Time.Equal)
	// A rule without an occurrence adds none to the set, which may still
	// fire at its RDATEs or other rules' occurrences: it is left out (its
	// expansion would search the whole horizon at every Next), and
	// rejected only if the set as a whole has no occurrence.
	var empty error
	for _, rule := range rules {
		e, err := newExpansion(rule, start, zone, ex)
		if err != nil {
			return nil, fmt.Errorf("%w: recurrence line %q: %v", ErrInvalidSpec, rule, err)
		}
		if err := e.check(start, zone); err != nil {
			if empty == nil {
				empty = fmt.Errorf("%w: recurrence line %q: %v", ErrInvalidSpec, rule, err)
			}
			continue
		}
		spec.rules = append(spec.rules, e)
	}
	if spec.first(start).IsZero() {
		return nil, spec.whyEmpty(empty, len(rules), len(rdateWalls)+len(rdateInstants))
	}
	return spec, nil
}

// first returns the set's first occurrence, or zero when it has none
// (within rruleHorizon years of DTSTART, the wall time start): the
// earliest is no earlier than DTSTART's wall time read with the greatest
// offset, nor than the first RDATE.
func (r rruleSpec) first(start time.Time) time.Time {
	before := time.Unix(start.Unix()-zone.MaxOffset-1, 0)
	if len(r.dates) > 0 && r.dates[0].Before(before) {
		before = r.dates[0].Add(-time.Second)
	}
	return r.Next(before)
}

// whyEmpty says why a set has no occurrence: ruleErr is the first of its
// rules found to have none, nil if every rule has some (r.rules, whose
// occurrences the EXDATEs then all remove); rules and rdates count its
// RRULE lines and RDATEs.
func (r rruleSpec) whyEmpty(ruleErr error, rules, rdates int) error {
	switch {
	case ruleErr != nil && len(r.rules) == 0 && rdates == 0:
		return ruleErr
	case ruleErr != nil && len(r.rules) == 0:
		return fmt.Errorf("%w, and the EXDATEs remove every RDATE", ruleErr)
	case rules == 0 && rdates == 0:
		return fmt.Errorf("%w: recurrence %q has no occurrence: it has no RRULE or RDATE line, and DTSTART alone gives none", ErrInvalidSpec, r.text)
	case rules == 0:
		return fmt.Errorf("%w: recurrence %q has no occurrence: the EXDATEs remove every RDATE", ErrInvalidSpec, r.text)
	}
	within := ""
	for _, e := range r.rules {
		if e.opt.Count == 0 && e.until.IsZero() {
			within = fmt.Sprintf(" within %d years of DTSTART", rruleHorizon) // Next looks no further
		}
	}
	return fmt.Errorf("%w: recurrence %q has no occurrence%s: the EXDATEs remove every occurrence", ErrInvalidSpec, r.text, within)
}

// propertyName returns a content line's property name, upper-cased: what
// comes before its first ':' or ';'.
func propertyName(line string) string {
	return strings.ToUpper(line[:strings.IndexAny(line+":", ":;")])
}

// exclusions are a recurrence's EXDATEs, kept so that they are compared
// with the occurrences as RRule documents: as wall times where both are
// written as local times of DTSTART's zone (python-dateutil compares
// times of one tzinfo so), as instants where either is written in UTC or
// another zone, and by date for VALUE=DATE.
type exclusions struct {
	// exdates are the wall times (Unix seconds on the floating wall clock)
	// of the EXDATEs written as local times of DTSTART's zone.
	exdates map[int64]bool
	// placed are the instants RFC 5545 places those wall times at.
	placed map[int64]bool
	// instants are the EXDATEs written in UTC or another zone.
	instants map[int64]bool
	// days are the VALUE=DATE EXDATEs' dates, as days since 1970-01-01.
	days map[int64]bool
}

// excludesWall reports whether an occurrence written as the wall time w
// of DTSTART's zone (the rule's, or an RDATE in that zone), placed at at,
// is excluded.
func (x exclusions) excludesWall(w int64, at time.Time) bool {
	return x.exdates[w] || x.instants[at.Unix()] || x.days[dayOf(w)]
}

// excludesInstant reports whether an RDATE written in UTC or a zone other
// than loc, DTSTART's, is excluded.
func (x exclusions) excludesInstant(at time.Time, loc *time.Location) bool {
	return x.instants[at.Unix()] || x.placed[at.Unix()] || x.days[dayOf(wallOf(at, loc))]
}

// dayOf returns the date of a wall time (Unix seconds on the floating
// wall clock) as days since 1970-01-01.
func dayOf(w int64) int64 {
	if w < 0 {
		return (w+1)/86400 - 1
	}
	return w / 86400
}

// recurrenceDates is an RDATE or EXDATE line read.
type recurrenceDates struct {
	rdate    bool
	walls    []time.Time // local times of DTSTART's zone, on the floating wall clock
	instants []time.Time // UTC times and local times of other zones
	days     []int64     // VALUE=DATE dates (EXDATE only), days since 1970-01-01
}

// readDates reads an RDATE or EXDATE line, "NAME[;TZID=Zone][;VALUE=
// DATE-TIME]:t1,t2,…" or "EXDATE;VALUE=DATE:d1,d2,…". A local time in
// the rule's own zone (no TZID, or the same one) is a wall time on the
// floating wall clock, taken as it is written — never through time.Date,
// which would move a time in a gap — so it matches the rule's occurrence
// of the same wall time. A UTC time (…Z) or one in another zone is an
// instant, kept as one: a wall time could not tell the two passes of a
// repeated hour apart.
func readDates(line string, zone *time.Location) (recurrenceDates, error) {
	var d recurrenceDates
	head, value, found := strings.Cut(line, ":")
	if !found {
		return d, fmt.Errorf("no value after the property name")
	}
	params := strings.Split(head, ";")
	d.rdate = strings.EqualFold(params[0], "RDATE")
	in, tzid, dates := zone, false, false
	for _, p := range params[1:] {
		name, v, _ := strings.Cut(p, "=")
		switch strings.ToUpper(name) {
		case "TZID":
			l, err := time.LoadLocation(strings.Trim(v, `"`))
			if err != nil {
				return d, fmt.Errorf("TZID %s is not a time zone of the zone database", v)
			}
			in, tzid = l, true
		case "VALUE":
			switch {
			case strings.EqualFold(v, "DATE-TIME"):
				dates = false
			case strings.EqualFold(v, "DATE") && !d.rdate:
				dates = true
			case strings.EqualFold(v, "DATE"):
				return d, fmt.Errorf("VALUE=DATE is supported on EXDATE only (an RDATE needs a time of day: VALUE=DATE-TIME)")
			default:
				return d, fmt.Errorf("VALUE=%s is not supported (DATE-TIME is, and DATE on EXDATE)", v)
			}
		default:
			return d, fmt.Errorf("parameter %s is not supported (TZID and VALUE=DATE-TIME are, and VALUE=DATE on EXDATE)", p)
		}
	}
	if dates && tzid {
		return d, fmt.Errorf("TZID does not apply to VALUE=DATE (RFC 5545 §3.2.19): a date is one of DTSTART's zone")
	}
	for _, v := range strings.Split(value, ",") {
		v = strings.TrimSpace(v)
		if dates {
			t, err := time.Parse("20060102", v)
			if err != nil {
				return d, fmt.Errorf("%s is not a date such as 20260101", v)
			}
			d.days = append(d.days, dayOf(t.Unix()))
			continue
		}
		local, utc := strings.CutSuffix(v, "Z")
		t, err := time.Parse(rrule.LocalDateTimeFormat, local)
		if err != nil {
			if _, err := time.Parse("20060102", v); err == nil && !d.rdate {
				return d, fmt.Errorf("%s is not a date and time such as 20260101T093000 (a date alone needs VALUE=DATE)", v)
			}
			return d, fmt.Errorf("%s is not a date and time such as 20260101T093000", v)
		}
		switch {
		case utc:
			d.instants = append(d.instants, t)
		case in.String() != zone.String():
			d.instants = append(d.instants, resolveRFC5545(t.Unix(), in))
		default:
			d.walls = append(d.walls, t)
		}
	}
	return d, nil
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

type rruleSpec struct {
	rules []expansion // one per RRULE line
	dates []time.Time // RDATEs, placed, sorted
	loc   *time.Location
	text  string
}

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

// countAndUntil rejects what rrule-go reads without a word: a COUNT below
// 1 (it takes 0 and negatives as no COUNT, a rule without end) and COUNT
// with UNTIL (RFC 5545 §3.3.10: they "MUST NOT occur in the same
// 'recur'"; rrule-go would apply both).
func countAndUntil(line string) error {
	var count, until string
	for _, part := range strings.Split(line[len("RRULE:"):], ";") {
		name, value, _ := strings.Cut(part, "=")
		switch strings.ToUpper(name) {
		case "COUNT":
			count = part
			if n, err := strconv.Atoi(value); err == nil && n < 1 {
				return fmt.Errorf("%s: COUNT must be at least 1 (it is the number of occurrences)", part)
			}
		case "UNTIL":
			until = part
		}
	}
	if count != "" && until != "" {
		return fmt.Errorf("%s and %s: a rule ends by COUNT or by UNTIL, not both (RFC 5545 §3.3.10)", count, until)
	}
	return nil
}

// readUntil returns the instant an RRULE line's UNTIL stands for: a UTC
// time (…Z) as it is; a floating date or date and time as its wall time
// is placed by RFC 5545 (rrule-go read it through time.Date, parsed).
func readUntil(line string, parsed time.Time, loc *time.Location) time.Time {
	for _, part := range strings.Split(line[len("RRULE:"):], ";") {
		v, ok := strings.CutPrefix(strings.ToUpper(part), "UNTIL=")
		if !ok || strings.HasSuffix(v, "Z") {
			continue
		}
		layout := rrule.LocalDateTimeFormat
		if len(v) == len("20060102") {
			layout = "20060102"
		}
		if w, err := time.Parse(layout, v); err == nil {
			return resolveRFC5545(w.Unix(), loc)
		}
	}
	return parsed
}

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

func (r rruleSpec) String() string { return r.text }

func (r rruleSpec) Next(t time.Time) time.Time {
	var best time.Time
	if len(r.rules) > 0 {
		lo, hi := offsetsAround(t, r.loc)
		for _, e := range r.rules {
			if n := r.next(e, t, lo, hi); !n.IsZero() && (best.IsZero() || n.Before(best)) {
				best = n
			}
		}
	}
	i, _ := slices.BinarySearchFunc(r.dates, t, func(d, t time.Time) int {
		if d.After(t) {
			return 1
		}
		return -1
	})
	if i < len(r.dates) && (best.IsZero() || r.dates[i].Before(best)) {
		best = r.dates[i].In(r.loc)
	}
	return best
}

// offsetsAround returns the least and the greatest UTC offset loc has from
// two days before t to 2·zone.MaxOffset and two days after it, in seconds.
func offsetsAround(t time.Time, loc *time.Location) (lo, hi int64) {
	lo, hi = zone.MaxOffset, -zone.MaxOffset
	a, end := t.Unix()-2*86400, t.Unix()+2*zone.MaxOffset+2*86400
	for a < end {
		off, next := zone.Segment(a, loc)
		lo, hi = min(lo, off), max(hi, off)
		if next == zone.NoEnd {
			break
		}
		a = next
	}
	return lo, hi
}

// next returns the expansion's first occurrence after t, or zero. lo and
// hi are loc's least and greatest offsets around t (offsetsAround).
//
// A wall time w stands for the instant w minus an offset in force at or
// just before it, and RFC 5545's placement is not monotonic (02:30 in a
// gap becomes 03:30, after 03:15). So the walk starts at the wall time
// t+lo — an instant after t has a later wall time, whether near t (its
// offset is at least lo) or far (its offset is less than MaxOffset) —
// and it stops once the wall time is more than hi past the best instant
// found (MaxOffset when that instant is past the span lo and hi cover):
// no later wall time is placed before it.
func (r rruleSpec) next(e expansion, t time.Time, lo, hi int64) time.Time {
	if !e.until.IsZero() && !t.Before(e.until) {
		return time.Time{}
	}
	from := time.Unix(t.Unix()+lo, 0).UTC()
	covered := t.Unix() + 2*zone.MaxOffset
	horizon := from.AddDate(rruleHorizon, 0, 0)
	var best time.Time
	next := e.from(from).Iterator()
	for w, ok := next(); ok && !w.After(horizon); w, ok = next() {
		if w.Before(from) {
			continue
		}
		if !best.IsZero() {
			margin := hi
			if best.Unix() > covered {
				margin = zone.MaxOffset
			}
			if w.Unix()-margin > best.Unix() {
				break
			}
		}
		at := resolveRFC5545(w.Unix(), r.loc)
		if e.excludesWall(w.Unix(), at) {
			continue
		}
		if !e.until.IsZero() && at.After(e.until) {
			continue
		}
		if at.After(t) && (best.IsZero() || at.Before(best)) {
			best = at
		}
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

var weekdays = map[time.Weekday]rrule.Weekday{
	time.Monday: rrule.MO, time.Tuesday: rrule.TU, time.Wednesday: rrule.WE, time.Thursday: rrule.TH,
	time.Friday: rrule.FR, time.Saturday: rrule.SA, time.Sunday: rrule.SU,
}
