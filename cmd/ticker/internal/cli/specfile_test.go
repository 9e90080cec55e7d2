package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
)

// --spec-file reads at most 1 MiB: a spec of exactly 1 MiB is read, one
// byte more is refused by name and size before the spec is parsed, and a
// file that never ends (/dev/zero, which read until memory ran out) is
// refused as soon as the bound is passed. Both commands that take the
// flag read it the same way.
func TestSpecFileIsReadUpToOneMiB(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, size int) string {
		// A valid spec padded with blank lines: only its size can refuse it.
		spec := "@daily\n" + strings.Repeat("\n", size-len("@daily\n"))
		require.Len(t, spec, size)
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(spec), 0o600))
		return path
	}
	exact, over := write("exact.cron", 1<<20), write("over.cron", 1<<20+1)

	r := run(t, nil, nil, "schedule", "preview", "--spec-file", exact, "--from", "2026-01-01T00:00:00Z", "-n", "1")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, "2026-01-02T00:00:00Z  Fri\n", r.stdout)

	db := filepath.Join(dir, "passage.db")
	for _, args := range [][]string{
		{"schedule", "preview", "--spec-file", over},
		{"schedule", "add", "--db", db, "--name", "n", "--command", "c", "--spec-file", over},
		{"schedule", "preview", "--spec-file", "/dev/zero"},
	} {
		r := run(t, nil, nil, args...)
		require.Equal(t, cli.ExitUsage, r.code, "%v: %s", args, r.stderr)
		require.Contains(t, r.stderr, fmt.Sprintf("--spec-file %q: too large: more than 1 MiB", args[len(args)-1]), args)
		require.Less(t, len(r.stderr), 300, args)
	}
	_, err := os.Stat(db)
	require.ErrorIs(t, err, os.ErrNotExist, "a refused spec creates no database")
}

// A bad spec is echoed by a short prefix and its length, however long it
// is and whichever part of the parser refuses it; the error it used to
// give was three times the spec (6.7 MB of spec, 20 MB of error).
func TestABadSpecIsEchoedByAShortPrefix(t *testing.T) {
	t.Parallel()
	const size = 1 << 20
	long := func(head string, fill byte) string { return head + strings.Repeat(string(fill), size-len(head)) }
	dir := t.TempDir()
	for i, c := range []struct {
		spec, reason string
	}{
		{long("", 'x'), "expected 5 to 6 fields"},
		{long("0 12 * * ", 'z'), "day of week field"},
		{long("@every ", 'y'), "is not a duration"},
		{long("DTSTART:20260101T000000Z\nRRULE:FREQ=DAILY;", 'X'), "wrong format"},
		{long("RDATE:", '2'), "no DTSTART line"},
		{strings.Repeat("0 12 * * FRI\n", size/13), "expected 5 to 6 fields"},
	} {
		path := filepath.Join(dir, fmt.Sprintf("spec%d", i))
		require.NoError(t, os.WriteFile(path, []byte(c.spec), 0o600))
		r := run(t, nil, nil, "schedule", "preview", "--spec-file", path)
		require.Equal(t, cli.ExitUsage, r.code, "spec %d: %.200s", i, r.stderr)
		require.Less(t, len(r.stderr), 1500, "spec %d: %.200s", i, r.stderr)
		require.Contains(t, r.stderr, c.reason, "spec %d", i)
		trimmed := strings.TrimSpace(c.spec)
		require.Contains(t, r.stderr, fmt.Sprintf("--spec %q… (%d bytes)", trimmed[:64], len(trimmed)), "spec %d", i)
	}
	// A short bad spec is echoed whole, as before.
	r := run(t, nil, nil, "schedule", "preview", "--spec", "61 * * * *")
	require.Equal(t, cli.ExitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, `--spec "61 * * * *": `)
}
