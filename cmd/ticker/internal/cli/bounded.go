package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxSpecBytes bounds what --spec-file reads. A spec is a cron line or an
// iCalendar recurrence of a few lines; even one listing thousands of RDATE
// or EXDATE instants is well under it. Without a bound --spec-file
// /dev/zero read until memory ran out.
const maxSpecBytes = 1 << 20

// errTooLarge is returned by readBounded for a file over its bound.
var errTooLarge = errors.New("too large")

// readBounded reads the file at path, refusing one of more than limit
// bytes without reading past limit+1 (a device such as /dev/zero never
// ends).
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%w: more than %s, the most it may hold", errTooLarge, byteSize(limit))
	}
	return b, nil
}

// byteSize writes n as MiB or KiB when it is a whole number of them.
func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Bounds on what an error message echoes of a bad value.
const (
	clipRun    = 64  // a quoted value or an unbroken run of text
	maxMessage = 640 // a whole message
)

// clipValue quotes s, or its first clipRun bytes and its length when it is
// longer: enough to recognise the value in an error message.
func clipValue(s string) string {
	if len(s) <= clipRun {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(prefix(s, clipRun)), len(s))
}

// prefix is at most the first n bytes of s, cut at a rune boundary.
func prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// clipMessage shortens an error message that echoes a value, whatever
// the form the echo takes: each quoted string and each unbroken run of
// text longer than clipRun keeps its first clipRun bytes, and what
// remains, if still longer than maxMessage bytes, keeps its beginning
// and its end (where the reason usually is).
func clipMessage(msg string) string {
	var b strings.Builder
	for rest := msg; rest != ""; {
		if rest[0] == '"' {
			if q, err := strconv.QuotedPrefix(rest); err == nil {
				if v, err := strconv.Unquote(q); err == nil && len(v) > clipRun {
					b.WriteString(clipValue(v))
				} else {
					b.WriteString(q)
				}
				rest = rest[len(q):]
				continue
			}
		}
		// An unbroken run: up to the next space or quote.
		end := strings.IndexAny(rest[1:], " \t\n\"")
		if end < 0 {
			end = len(rest)
		} else {
			end++
		}
		run := rest[:end]
		if len(run) > clipRun {
			run = fmt.Sprintf("%s… (%d bytes)", prefix(run, clipRun), len(run))
		}
		b.WriteString(run)
		rest = rest[end:]
	}
	out := b.String()
	if len(out) <= maxMessage {
		return out
	}
	head, tail := prefix(out, maxMessage*3/4), out[len(out)-maxMessage/4:]
	for tail != "" && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	return fmt.Sprintf("%s … (%d bytes cut) … %s", head, len(out)-len(head)-len(tail), tail)
}

// plural is "1 run" or "3 runs".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
