package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
	"github.com/passage-of-time/passage/internal/timefmt"
)

func TestSchedulePreviewListsFireInstantsAcrossDST(t *testing.T) {
	t.Parallel()
	r := run(t, nil, nil, "schedule", "preview", "--spec", "30 2 * * *", "--tz", "Europe/Warsaw", "--from", "2026-03-27", "-n", "4")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, "2026-03-27T02:30:00+01:00  Fri\n2026-03-28T02:30:00+01:00  Sat\n"+
		"2026-03-29T03:00:00+02:00  Sun\n2026-03-30T02:30:00+02:00  Mon\n", r.stdout,
		"the 02:30 the clocks skip fires once, at the first instant after the gap")

	// An iCalendar rule from a file, and local mean time printed to the
	// second: each line's instant reads back as itself.
	file := filepath.Join(t.TempDir(), "rule.ics")
	require.NoError(t, os.WriteFile(file, []byte("DTSTART;TZID=Africa/Monrovia:19600101T090000\nRRULE:FREQ=WEEKLY;BYDAY=MO;COUNT=2\n"), 0o600))
	r = run(t, nil, nil, "schedule", "preview", "--spec-file", file, "--from", "1960-01-01T00:00:00Z", "-n", "5")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, "1960-01-04T09:00:00-00:44:30  Mon\n1960-01-11T09:00:00-00:44:30  Mon\n", r.stdout)
	require.Contains(t, r.stderr, "the schedule has no more fire instants")
	for line := range strings.Lines(r.stdout) {
		at, err := timefmt.Parse(strings.Fields(line)[0])
		require.NoError(t, err)
		require.Equal(t, 9, at.Hour(), line)
	}

	r = run(t, nil, nil, "schedule", "preview", "--spec", "@every 8h", "--tz", "Europe/Warsaw", "--from", "2026-03-28T12:00:00+01:00", "-n", "2")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, "2026-03-28T17:00:00+01:00  Sat\n2026-03-29T01:00:00+01:00  Sun\n", r.stdout)
}

func TestSchedulePreviewFlagErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"schedule"}, "a subcommand is needed"},
		{[]string{"schedule", "explode"}, `unknown subcommand "explode"`},
		{[]string{"schedule", "preview"}, "exactly one of --spec and --spec-file"},
		{[]string{"schedule", "preview", "--spec", "@daily", "--spec-file", "x"}, "exactly one of --spec and --spec-file"},
		{[]string{"schedule", "preview", "--spec", "61 * * * *"}, `minute field "61"`},
		{[]string{"schedule", "preview", "--spec", "DTSTART:20260101T000000\nRRULE:FREQ=SOMETIMES"}, `line "RRULE:FREQ=SOMETIMES"`},
		{[]string{"schedule", "preview", "--spec", "@daily", "--tz", "Mars/Olympus"}, `--tz "Mars/Olympus"`},
		{[]string{"schedule", "preview", "--spec", "@daily", "-n", "0"}, "-n 0"},
		{[]string{"schedule", "preview", "--spec", "@daily", "--tz", "Europe/Warsaw", "--from", "2026-03-29T02:30"}, "does not exist"},
		{[]string{"schedule", "preview", "--spec-file", "/nonexistent/rule.ics"}, `--spec-file "/nonexistent/rule.ics"`},
	} {
		r := run(t, nil, nil, c.args...)
		require.Equal(t, cli.ExitUsage, r.code, "%v: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, c.want, "%v", c.args)
	}
	r := run(t, nil, nil, "schedule", "preview", "-h")
	require.Equal(t, cli.ExitOK, r.code)
	require.Contains(t, r.stdout, "--spec")
}

// A rule with COUNT keeps every occurrence however far it reaches: COUNT=400
// yearly from 1850, previewed from 2140, runs to 2249 (January 1 of each
// year, listed by a loop) and then ends.
func TestSchedulePreviewShowsACountPast292Years(t *testing.T) {
	t.Parallel()
	r := run(t, nil, nil, "schedule", "preview", "--spec", `DTSTART:18500101T000000Z\nRRULE:FREQ=YEARLY;COUNT=400`, "--from", "2140-01-01T00:00:00Z", "-n", "200")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var want strings.Builder
	for y := 2141; y <= 2249; y++ {
		at := time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC)
		fmt.Fprintf(&want, "%s  %s\n", at.Format(time.RFC3339), at.Format("Mon"))
	}
	require.Equal(t, want.String(), r.stdout)
	require.Contains(t, r.stderr, "the schedule has no more fire instants")
}

// Specs that mean nothing are flag errors naming the part: COUNT=0, COUNT
// with UNTIL, a recurrence whose EXDATEs remove every date. Sunday as 7
// is cron's, taken.
func TestSchedulePreviewRefusesSpecsThatMeanNothing(t *testing.T) {
	t.Parallel()
	for spec, want := range map[string]string{
		`DTSTART:20260101T000000Z\nRRULE:FREQ=YEARLY;COUNT=0`:                        `recurrence line "RRULE:FREQ=YEARLY;COUNT=0": COUNT=0: COUNT must be at least 1`,
		`DTSTART:20260101T000000Z\nRRULE:FREQ=YEARLY;COUNT=3;UNTIL=20300101T000000Z`: "COUNT=3 and UNTIL=20300101T000000Z: a rule ends by COUNT or by UNTIL, not both",
		`DTSTART:20260101T000000Z\nRDATE:20260301T000000Z\nEXDATE:20260301T000000Z`:  "has no occurrence: the EXDATEs remove every RDATE",
	} {
		r := run(t, nil, nil, "schedule", "preview", "--spec", spec)
		require.Equal(t, cli.ExitUsage, r.code, "%s: %s", spec, r.stderr)
		require.Contains(t, r.stderr, want, spec)
	}
	r := run(t, nil, nil, "schedule", "preview", "--spec", "0 9 * * 5-7", "--from", "2026-01-01", "-n", "4")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, "2026-01-02T09:00:00Z  Fri\n2026-01-03T09:00:00Z  Sat\n2026-01-04T09:00:00Z  Sun\n2026-01-09T09:00:00Z  Fri\n", r.stdout)
	r = run(t, nil, nil, "schedule", "preview", "--spec", `DTSTART:20260101T000000Z\nRRULE:FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30\nRDATE:20260301T000000Z`, "--from", "2026-01-01")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, "2026-03-01T00:00:00Z  Sun\n", r.stdout, "a rule that yields nothing beside an RDATE: the set fires at the RDATE")
}
