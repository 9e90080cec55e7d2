package schedule

import (
	"fmt"
	"slices"
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

type rruleSpec struct {
	rules []expansion // one per RRULE line
	dates []time.Time // RDATEs, placed, sorted
	loc   *time.Location
	text  string
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
