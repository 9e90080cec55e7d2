package schedule

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/passage-of-time/passage/internal/zone"
)

// cronParser reads 5 fields (minute to day of week), 6 (seconds first) and
// the descriptors @yearly, @monthly, @weekly, @daily, @hourly.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// starBit is robfig/cron's mark of a field written "*" or "?".
const starBit = 1 << 63

// cronHorizon bounds the search for a cron expression's next slot: Feb 29
// on a Monday recurs within 28 years, Feb 30 never.
const cronHorizon = 400

// Cron returns the slots of a cron expression of 5 fields (minute, hour,
// day of month, month, day of week), 6 (seconds first) or a descriptor
// (@daily, @weekly, …), read by github.com/robfig/cron/v3, in loc (nil
// means UTC; a CRON_TZ= prefix names the zone instead). The day of week
// takes 7 for Sunday as well as 0, as Vixie cron does ("0 0 * * 5-7" is
// Friday to Sunday), which robfig/cron alone would reject.
//
// Daylight saving follows cron's custom (Vixie cron): a time the clock
// jumps over fires once, at the first instant after the jump; a time that
// occurs twice fires once, at the first occurrence — unless the hour field
// is an interval ("*" or "*/n"), when the spec follows the wall clock: a
// time it jumps over does not fire, and both passes of a repeated hour do
// (every 30 minutes runs through both).
func Cron(expr string, loc *time.Location) (Spec, error) {
	text := strings.TrimSpace(expr)
	if strings.HasPrefix(text, "@every") {
		return nil, fmt.Errorf("%w: cron %q: @every is an interval, not a cron expression: use Every or Parse", ErrInvalidSpec, expr)
	}
	if rest, ok := cutTZ(text); ok {
		name, body, _ := strings.Cut(rest, " ")
		l, err := time.LoadLocation(name)
		if err != nil {
			return nil, fmt.Errorf("%w: cron %q: CRON_TZ=%s is not a time zone of the zone database", ErrInvalidSpec, expr, name)
		}
		if loc != nil && loc.String() != l.String() {
			return nil, fmt.Errorf("%w: cron %q names zone %s, and %s was given too", ErrInvalidSpec, expr, l, loc)
		}
		loc, text = l, strings.TrimSpace(body)
	}
	if loc == nil {
		loc = time.UTC
	}
	parsed, err := cronParser.Parse(sundayAsSeven(text))
	if err != nil {
		return nil, fmt.Errorf("%w: cron %q: %s", ErrInvalidSpec, expr, describeCronError(text, err))
	}
	s, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("%w: cron %q: not a field-based expression", ErrInvalidSpec, expr)
	}
	c := cronSpec{text: text, loc: loc, fields: *s, interval: hourIsInterval(text)}
	if _, ok := c.nextWall(0, cronHorizon*366*86400); !ok {
		return nil, fmt.Errorf("%w: cron %q: its day of month and month never meet (in %d years)", ErrInvalidSpec, expr, cronHorizon)
	}
	return c, nil
}

func cutTZ(s string) (string, bool) {
	for _, p := range []string{"CRON_TZ=", "TZ="} {
		if rest, ok := strings.CutPrefix(s, p); ok {
			return rest, true
		}
	}
	return "", false
}

// describeCronError names the field robfig/cron's error is about: each
// field is parsed alone, the others left as "*".
func describeCronError(text string, err error) string {
	fields := strings.Fields(text)
	names := []string{"minute", "hour", "day of month", "month", "day of week"}
	if len(fields) == 6 {
		names = append([]string{"second"}, names...)
	}
	if len(fields) != len(names) || strings.HasPrefix(text, "@") {
		return err.Error()
	}
	for i := range fields {
		probe := make([]string, len(fields))
		for j := range probe {
			probe[j] = "*"
		}
		probe[i] = fields[i]
		if _, perr := cronParser.Parse(sundayAsSeven(strings.Join(probe, " "))); perr != nil {
			if names[i] == "day of week" {
				// robfig/cron's maximum (6) leaves out the 7 Cron takes.
				return fmt.Sprintf("%s field %q: %v (days are 0 to 7, both Sunday, or SUN to SAT)", names[i], fields[i], perr)
			}
			return fmt.Sprintf("%s field %q: %v", names[i], fields[i], perr)
		}
	}
	return err.Error()
}

// sundayAsSeven returns text with the 7s of its day-of-week field written
// as 0: Vixie cron, and most crons after it, take 7 for Sunday as well as
// 0, and robfig/cron/v3 takes 0 only. A single 7 becomes 0, and a range
// that ends at 7 becomes its list of days, 7 as 0: "5-7" is "5,6,0",
// "1-7/2" is "1,3,5,0". Anything else is left for robfig/cron to read or
// reject.
func sundayAsSeven(text string) string {
	f := strings.Fields(text)
	if strings.HasPrefix(text, "@") || len(f) < 5 || len(f) > 6 {
		return text
	}
	parts := strings.Split(f[len(f)-1], ",")
	for i, p := range parts {
		parts[i] = sevenAsZero(p)
	}
	f[len(f)-1] = strings.Join(parts, ",")
	return strings.Join(f, " ")
}

// sevenAsZero rewrites one part of a day-of-week list (see sundayAsSeven).
func sevenAsZero(part string) string {
	rng, stepText, hasStep := strings.Cut(part, "/")
	lo, hi, isRange := strings.Cut(rng, "-")
	switch {
	case !isRange && !hasStep && rng == "7":
		return "0"
	case !isRange || hi != "7":
		return part
	}
	from, err := strconv.Atoi(lo)
	step := 1
	if err == nil && hasStep {
		step, err = strconv.Atoi(stepText)
	}
	if err != nil || from < 0 || from > 7 || step < 1 {
		return part
	}
	var days []string
	for d := from; d <= 7; d += step {
		days = append(days, strconv.Itoa(d%7))
	}
	return strings.Join(days, ",")
}

// hourIsInterval reports whether the hour field is "*" or a step over the
// whole day ("*/2"), the fields that make a spec follow the wall clock
// through DST rather than fire once.
func hourIsInterval(text string) bool {
	if strings.HasPrefix(text, "@") {
		return text == "@hourly"
	}
	f := strings.Fields(text)
	hour := f[1]
	if len(f) == 6 {
		hour = f[2]
	}
	return hour == "*" || strings.HasPrefix(hour, "*/")
}

type cronSpec struct {
	text     string
	loc      *time.Location
	fields   cron.SpecSchedule
	interval bool
}

func (c cronSpec) String() string { return "CRON_TZ=" + c.loc.String() + " " + c.text }

func (c cronSpec) Next(t time.Time) time.Time {
	if c.interval {
		return c.nextOnWallClock(t)
	}
	// Each matching wall time stands for one instant (its first
	// occurrence, or the end of the gap that swallows it), and later wall
	// times never stand for earlier instants: the first wall time from t's
	// own whose instant is after t is the answer.
	w := wallOf(t, c.loc)
	limit := w + cronHorizon*366*86400
	for {
		next, ok := c.nextWall(w, limit)
		if !ok {
			return time.Time{}
		}
		if at := resolveFirst(next, c.loc); at.After(t) {
			return at
		}
		w = next + 1
	}
}

// nextOnWallClock returns the first instant after t at which the wall
// clock shows a matching time, segment by segment of constant offset.
func (c cronSpec) nextOnWallClock(t time.Time) time.Time {
	a := t.Unix() + 1 // slots are whole seconds
	limit := a + cronHorizon*366*86400
	for a < limit {
		off, end := zone.Segment(a, c.loc)
		w, ok := c.nextWall(a+off, limit+zone.MaxOffset)
		if !ok {
			return time.Time{}
		}
		if at := w - off; end == zone.NoEnd || at < end {
			return time.Unix(at, 0).In(c.loc)
		}
		a = end
	}
	return time.Time{}
}

// nextWall returns the first wall time (as the Unix seconds of the same
// date and time in UTC, where no day is skipped or repeated) at or after
// w that the fields match, up to limit.
func (c cronSpec) nextWall(w, limit int64) (int64, bool) {
	f := c.fields
	t := time.Unix(w, 0).UTC()
	for t.Unix() <= limit {
		y, m, d := t.Date()
		h, mi, s := t.Clock()
		switch {
		case f.Month&(1<<uint(m)) == 0:
			t = time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC)
		case !c.dayMatches(t):
			t = time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
		case f.Hour&(1<<uint(h)) == 0:
			t = time.Date(y, m, d, nextSet(f.Hour, h, 24), 0, 0, 0, time.UTC)
		case f.Minute&(1<<uint(mi)) == 0:
			t = time.Date(y, m, d, h, nextSet(f.Minute, mi, 60), 0, 0, time.UTC)
		case f.Second&(1<<uint(s)) == 0:
			t = time.Date(y, m, d, h, mi, nextSet(f.Second, s, 60), 0, time.UTC)
		default:
			return t.Unix(), true
		}
	}
	return 0, false
}

// nextSet returns the first value after v that field holds, or n (which
// time.Date carries into the next hour, day or minute) when none below n
// does: a jump over the values that do not match, rather than a step per
// value (a 5-field spec would otherwise walk 59 seconds of every minute).
func nextSet(field uint64, v, n int) int {
	rest := field &^ starBit >> uint(v+1) << uint(v+1)
	if rest == 0 {
		return n
	}
	return min(bits.TrailingZeros64(rest), n)
}

// dayMatches applies cron's day rule: when both the day of month and the
// day of week are restricted, either may match; otherwise both must.
func (c cronSpec) dayMatches(t time.Time) bool {
	f := c.fields
	dom := f.Dom&(1<<uint(t.Day())) != 0
	dow := f.Dow&(1<<uint(t.Weekday())) != 0
	if f.Dom&starBit != 0 || f.Dow&starBit != 0 {
		return dom && dow
	}
	return dom || dow
}
