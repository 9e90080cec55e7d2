package dashboard

import (
	"fmt"
	"html/template"
	"time"
)

// Pages print an instant as how far it is from the page's now ("5 min
// ago", "in 3 h"), the reading an operator wants at a glance, inside a
// <time> whose datetime and title hold the exact instant: RFC 3339 to the
// second, in the zone the value carries (the dashboard's, or a schedule's
// own for its slots), so hovering shows it. The JSON API keeps its
// lossless instants; only the pages round.

// clock is the page's now, which every relative time is measured from:
// the dashboard's clock read once per request, so that one page's times
// agree with each other and with its header.
type clock struct{ Now time.Time }

// exact is the instant as the hover shows it: RFC 3339 without
// fractions of a second.
func exact(t time.Time) string { return t.Truncate(time.Second).Format(time.RFC3339) }

// when renders t (a Time, a *Time or a time.Time; nil or zero is "-")
// relative to c's now, with the exact instant on hover.
func when(t any, c clock) template.HTML {
	var at time.Time
	switch t := t.(type) {
	case Time:
		at = t.Time
	case *Time:
		if t == nil {
			return "-"
		}
		at = t.Time
	case time.Time:
		at = t
	default:
		return template.HTML(template.HTMLEscapeString(fmt.Sprint(t)))
	}
	if at.IsZero() {
		return "-"
	}
	x := template.HTMLEscapeString(exact(at))
	return template.HTML(`<time datetime="` + x + `" title="` + x + `">` + relative(at, c.Now) + `</time>`)
}

// relative says how far at is from now in the largest unit that gives a
// whole number of at least 1, rounded down: "40 s ago", "5 min ago",
// "in 3 h", "2 d ago"; "now" within a second.
func relative(at, now time.Time) string {
	d := at.Sub(now)
	future := d > 0
	if !future {
		d = -d
	}
	var n int64
	var unit string
	switch {
	case d < time.Second:
		return "now"
	case d < time.Minute:
		n, unit = int64(d/time.Second), "s"
	case d < time.Hour:
		n, unit = int64(d/time.Minute), "min"
	case d < 48*time.Hour:
		n, unit = int64(d/time.Hour), "h"
	default:
		n, unit = int64(d/(24*time.Hour)), "d"
	}
	if future {
		return fmt.Sprintf("in %d %s", n, unit)
	}
	return fmt.Sprintf("%d %s ago", n, unit)
}
