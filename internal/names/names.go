package names

import (
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// ErrDotSegment is the reason [Check] gives for "." and "..".
var ErrDotSegment = errors.New(`"." and ".." cannot be carried in a URL path (browsers and HTTP clients resolve them as directory steps), so the dashboard could not link to it`)

// Check reports why name cannot name something new, or nil: it must be 1
// to max bytes of valid UTF-8 (PostgreSQL's TEXT holds nothing else)
// without control characters (a NUL cannot be stored at all; the others
// cannot be typed or shown), and neither "." nor "..". The error is the
// bare reason; callers wrap it with their package's sentinel and say what
// was being named.
func Check(name string, max int) error {
	switch {
	case name == "":
		return errors.New("empty")
	case len(name) > max:
		return fmt.Errorf("%d bytes, at most %d allowed", len(name), max)
	case !utf8.ValidString(name):
		return fmt.Errorf("%q is not valid UTF-8", name)
	case name == "." || name == "..":
		return fmt.Errorf("%q: %w", name, ErrDotSegment)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return fmt.Errorf("%q contains control character %U", name, r)
		}
	}
	return nil
}
