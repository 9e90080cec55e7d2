package schedule

import (
	"fmt"
	"strings"
	"time"
)

// Parse reads a spec written as text, in loc (nil means UTC):
//
//   - "@every 8h", optionally "@every 8h from 2026-01-01T06:00:00Z": an
//     interval (Every) anchored at the given instant, else at the Unix
//     epoch (so @every 8h fires at 00:00, 08:00 and 16:00 UTC), its slots
//     shown in loc;
//   - an iCalendar recurrence: a DTSTART line and RRULE, RDATE or EXDATE
//     lines, newline-separated, in any order (RRule);
//   - otherwise a cron expression of 5 or 6 fields, or @yearly, @monthly,
//     @weekly, @daily, @hourly (Cron).
func Parse(text string, loc *time.Location) (Spec, error) {
	t := strings.TrimSpace(text)
	switch {
	case t == "":
		return nil, fmt.Errorf("%w: the spec is empty", ErrInvalidSpec)
	case strings.HasPrefix(t, "@every"):
		return parseEvery(t, loc)
	case isRecurrence(t):
		return RRule(t, loc)
	}
	return Cron(t, loc)
}

// isRecurrence reports whether any line of text (newline-separated, or
// by a written \n) is an iCalendar recurrence property: RFC 5545 puts
// them in any order, so an RDATE or EXDATE line may come first.
func isRecurrence(text string) bool {
	for _, line := range strings.Split(strings.ReplaceAll(text, `\n`, "\n"), "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		switch propertyName(line) {
		case "DTSTART", "RRULE", "RDATE", "EXDATE", "EXRULE":
			return true
		}
	}
	return false
}

func parseEvery(text string, loc *time.Location) (Spec, error) {
	f := strings.Fields(text)
	if len(f) != 2 && (len(f) != 4 || f[2] != "from") {
		return nil, fmt.Errorf("%w: %q: want @every DURATION or @every DURATION from INSTANT", ErrInvalidSpec, text)
	}
	d, err := time.ParseDuration(f[1])
	if err != nil {
		return nil, fmt.Errorf("%w: %q: interval %q is not a duration such as 8h or 90m", ErrInvalidSpec, text, f[1])
	}
	if loc == nil {
		loc = time.UTC
	}
	anchor := time.Unix(0, 0).In(loc) // the epoch, shown in loc
	if len(f) == 4 {
		if anchor, err = time.Parse(time.RFC3339, f[3]); err != nil {
			return nil, fmt.Errorf("%w: %q: anchor %q is not an RFC 3339 instant", ErrInvalidSpec, text, f[3])
		}
	}
	return Every(d, anchor)
}
