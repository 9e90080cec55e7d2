package natsjs

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/passage-of-time/passage/tick"
)

// skippedToken is the subject token under which a prefix's skip reports
// go: <prefix>.skipped.<unit>. No unit is called "skipped", and
// <prefix>.* still matches the boundaries alone.
const skippedToken = "skipped"

// checkPrefix refuses a prefix that is not a plain subject: a wildcard
// would make the publisher's subjects patterns, and white space or an
// empty token makes the server refuse them at the first publish, long
// after the ticker started.
func checkPrefix(prefix string) error {
	if prefix == "" {
		return fmt.Errorf("%w: empty (want tokens such as \"passage.time\")", ErrInvalidPrefix)
	}
	for i, tok := range strings.Split(prefix, ".") {
		if err := checkToken(tok); err != nil {
			return fmt.Errorf("%w: %q: token %d %v", ErrInvalidPrefix, prefix, i+1, err)
		}
	}
	return nil
}

// checkToken says what is wrong with one token of a subject, or nil.
func checkToken(tok string) error {
	if tok == "" {
		return fmt.Errorf("is empty (a leading, trailing or doubled dot)")
	}
	for _, r := range tok {
		switch {
		case r == '*' || r == '>':
			return fmt.Errorf("%q holds the wildcard %q: a prefix names subjects, it does not match them", tok, r)
		case unicode.IsSpace(r) || unicode.IsControl(r):
			return fmt.Errorf("%q holds white space or a control character (%U)", tok, r)
		}
	}
	return nil
}

// boundarySubject is where the boundaries of unit u go.
func boundarySubject(prefix string, u tick.Unit) (string, error) {
	if err := checkToken(string(u)); err != nil {
		return "", fmt.Errorf("%w: unit %q cannot be a subject token: %v", ErrUnsupportedEvent, u, err)
	}
	return prefix + "." + string(u), nil
}

// skippedSubject is where unit u's skip reports go.
func skippedSubject(prefix string, u tick.Unit) (string, error) {
	if err := checkToken(string(u)); err != nil {
		return "", fmt.Errorf("%w: unit %q cannot be a subject token: %v", ErrUnsupportedEvent, u, err)
	}
	return prefix + "." + skippedToken + "." + string(u), nil
}

// all is the subject filter of everything under prefix.
func all(prefix string) string { return prefix + ".>" }

// covers reports whether the stream subject filter stores every subject
// under prefix (prefix.>): "passage.time.>", "passage.>", "*.time.>" and
// ">" do; "passage.time.minute" and "passage.time.*" do not.
func covers(filter, prefix string) bool {
	f := strings.Split(filter, ".")
	p := strings.Split(prefix, ".")
	for i, tok := range f {
		if tok == ">" {
			return true
		}
		if i >= len(p) {
			// The filter goes deeper than prefix: it stores only some
			// of prefix.>.
			return false
		}
		if tok != "*" && tok != p[i] {
			return false
		}
	}
	return false
}

// overlaps reports whether two subject filters match a subject in
// common: token by token, "*" matches any one token and ">" the rest
// (one or more), in either. "passage.>" and "passage.demo.time.>"
// overlap; "passage.time.>" and "passage.runs.>" do not.
func overlaps(a, b string) bool {
	x, y := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; ; i++ {
		switch {
		case i == len(x) && i == len(y):
			return true
		case i == len(x) || i == len(y):
			// One ended: the other must match nothing more, unless it
			// ends in ">" here (which needs one token more, so no).
			return false
		case x[i] == ">" || y[i] == ">":
			return true
		case x[i] != "*" && y[i] != "*" && x[i] != y[i]:
			return false
		}
	}
}
