package schedule

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/teambition/rrule-go"
)

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
