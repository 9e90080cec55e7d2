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

// CheckPrefix says why prefix cannot be the first tokens of the subjects
// passage publishes, or returns nil. The one check of every prefix:
// Encode, EnsureStream, NewPublisher, NewConsumer, NewEventSink and the
// ticker binary's --nats-prefix all ask it. A prefix is one or more
// tokens separated by dots: empty, or with an empty token, a wildcard
// (which would make the subjects patterns, and the stream's filter,
// <prefix>.>, take other publishers' messages), white space or a control
// character, the server would refuse every publish, long after the
// ticker started; a '$' first names the server's own subjects ($JS, $SYS,
// $KV). The error is a *PrefixError, which wraps ErrInvalidPrefix.
func CheckPrefix(prefix string) error {
	switch {
	case prefix == "":
		return &PrefixError{Prefix: prefix, Reason: `empty (want tokens such as "passage.time")`}
	case strings.HasPrefix(prefix, "$"):
		return &PrefixError{Prefix: prefix, Reason: "subjects starting with $ are the server's ($JS, $SYS, $KV)"}
	}
	for i, tok := range strings.Split(prefix, ".") {
		if tok == "" {
			return &PrefixError{Prefix: prefix, Reason: fmt.Sprintf("token %d is empty (a leading, trailing or doubled dot)", i+1)}
		}
		if err := checkToken(tok); err != nil {
			return &PrefixError{Prefix: prefix, Reason: "token " + err.Error()}
		}
	}
	return nil
}

// checkToken says what is wrong with one token of a subject, or nil: a
// wildcard first, then white space or a control character.
func checkToken(tok string) error {
	if tok == "" {
		return fmt.Errorf("is empty (a leading, trailing or doubled dot)")
	}
	if i := strings.IndexAny(tok, "*>"); i >= 0 {
		return fmt.Errorf("%q holds the wildcard %q: a prefix names subjects, it does not match them", tok, tok[i])
	}
	if strings.IndexFunc(tok, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return fmt.Errorf("%q holds white space or a control character", tok)
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

// scheduleToken is the subject token under which a prefix's schedule
// records go: <prefix>.schedule.<name>[.skipped]. A Consumer of the
// prefix passes them by (they are not time: two tokens after the prefix).
const scheduleToken = "schedule"

// scheduleSubject is where the records of the schedule name go: its runs,
// or (skipped) its skipped slots. The name becomes one token, ASCII
// letters, digits, '-' and '_' as they are and every other byte as %XX
// ("billing.eu" is billing%2Eeu), since a dot, a wildcard or white space
// would change the subject's meaning.
func scheduleSubject(prefix, name string, skipped bool) string {
	subject := prefix + "." + scheduleToken + "." + escape(name, func(_ int, c byte) bool {
		return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_'
	})
	if skipped {
		subject += "." + skippedToken
	}
	return subject
}

// MsgID is the Nats-Msg-Id of an event's identity (CloudEvent.ID): the id
// itself, unless it holds what a header cannot carry as it is — a
// control character (a schedule's name may hold a line break), a space
// at either end, which header parsing trims — or a '%'. Such an id is
// sent with those bytes as %XX. Ids sent as they are hold no '%' and
// escaped ones do, so two ids never share a Nats-Msg-Id. Time's ids
// (unit/boundary, skipped/…) are always sent as they are.
func MsgID(id string) string {
	return escape(id, func(i int, c byte) bool {
		edge := (i == 0 || i == len(id)-1) && c == ' '
		return c >= 0x20 && c != 0x7f && c != '%' && !edge
	})
}

// StreamName is the stream a prefix's events go to unless the publisher
// names another: the prefix in capitals, dots (and slashes, which a
// stream's name cannot hold either) as underscores: passage is PASSAGE,
// acme.time ACME_TIME.
func StreamName(prefix string) string {
	return strings.ToUpper(strings.NewReplacer(".", "_", "/", "_", "\\", "_").Replace(prefix))
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
