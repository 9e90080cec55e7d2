package cli_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
)

// What the preview commands print reads back: each instant listed is an
// RFC 3339 time (read here by time.Parse, not by the ticker's parser) and
// a --from the same command takes. Near the end of year 9999 the lists stop
// before an instant whose local year has five digits — which both used to
// print, as 10000-01-01T00:00:00Z, and --from then refused — and say why on
// stderr. The year is the local one: Kiritimati's (+14:00) new year 10000
// is still 9999 in UTC, Adak's (-10:00) new year 9999 is already 10000 in
// UTC and is listed.
func TestPreviewPrintsOnlyInstantsThatReadBack(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want []string // the instants listed
	}{
		{[]string{"preview", "--unit", "day", "--from", "9999-12-29", "-n", "5"}, []string{"9999-12-30T00:00:00Z", "9999-12-31T00:00:00Z"}},
		{[]string{"preview", "--unit", "day", "--from", "9999-12-31"}, nil},
		{[]string{"preview", "--unit", "year", "--tz", "Pacific/Kiritimati", "--from", "9998-06-01"}, []string{"9999-01-01T00:00:00+14:00"}},
		{[]string{"preview", "--unit", "year", "--tz", "America/Adak", "--from", "9998-06-01"}, []string{"9999-01-01T00:00:00-10:00"}},
		{[]string{"schedule", "preview", "--spec", "@yearly", "--from", "9997-06-01", "-n", "5"}, []string{"9998-01-01T00:00:00Z", "9999-01-01T00:00:00Z"}},
		{[]string{"schedule", "preview", "--spec", "0 0 1 1 *", "--tz", "Pacific/Kiritimati", "--from", "9998-06-01"}, []string{"9999-01-01T00:00:00+14:00"}},
		{[]string{"schedule", "preview", "--spec", "@every 8h", "--from", "9999-12-31T00:00:00Z"}, []string{"9999-12-31T08:00:00Z", "9999-12-31T16:00:00Z"}},
	} {
		r := run(t, nil, nil, c.args...)
		require.Equal(t, cli.ExitOK, r.code, "%v: %s", c.args, r.stderr)
		got := listed(t, c.args[0], r.stdout)
		require.Equal(t, c.want, got, "%v", c.args)
		require.Contains(t, r.stderr, "is after the last instant RFC 3339 can write (year 9999)", c.args)
		require.Contains(t, r.stderr, "10000-01-01 00:00", c.args)
		for _, at := range got {
			_, err := time.Parse(time.RFC3339, at)
			require.NoError(t, err, "%v printed %s", c.args, at)
			again := append([]string{}, c.args...)
			for i := range again {
				if again[i] == "--from" {
					again[i+1] = at
				}
			}
			r := run(t, nil, nil, again...)
			require.Equal(t, cli.ExitOK, r.code, "%v: %s", again, r.stderr)
		}
	}
	// Far from the end nothing changes: the list is as long as asked.
	r := run(t, nil, nil, "preview", "--from", "2026-01-01", "-n", "3")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, []string{"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z"}, listed(t, "preview", r.stdout))
	require.Empty(t, r.stderr)
}

// listed returns the instants a preview command printed: the first field
// of each line (preview's after its two header lines).
func listed(t *testing.T, command, out string) []string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if command == "preview" {
		require.GreaterOrEqual(t, len(lines), 2, out)
		lines = lines[2:]
	}
	var at []string
	for _, l := range lines {
		if l != "" {
			at = append(at, strings.Fields(l)[0])
		}
	}
	return at
}
