package cli_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
)

// A local time or date the zone skipped or repeated is never read as
// another one: a date means its first instant, and what cannot be resolved
// is a flag error naming the gap or both offsets.
func TestLocalTimesThatDoNotExistOrRepeatAreResolvedOrRejected(t *testing.T) {
	t.Parallel()
	header := func(args ...string) string {
		t.Helper()
		r := run(t, nil, nil, append([]string{"preview", "-n", "1"}, args...)...)
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		first, _, _ := strings.Cut(r.stdout, "\n")
		return first
	}
	// São Paulo skipped midnight on 2018-11-04: the day starts at 01:00.
	require.Equal(t, "Next 1 hour boundaries in America/Sao_Paulo after 2018-11-04T01:00:00-02:00:",
		header("--unit", "hour", "--tz", "America/Sao_Paulo", "--from", "2018-11-04"))
	require.Equal(t, "Next 1 day boundaries in Europe/Warsaw after 2026-03-29T03:30:00+02:00:",
		header("--tz", "Europe/Warsaw", "--from", "2026-03-29T03:30"))

	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"preview", "--tz", "Pacific/Apia", "--from", "2011-12-30"},
			[]string{`--from "2011-12-30": the date does not exist in Pacific/Apia`, "2011-12-29 23:59:59 (-10:00)", "2011-12-31 00:00 (+14:00)"}},
		{[]string{"preview", "--tz", "Europe/Warsaw", "--from", "2026-03-29T02:30"},
			[]string{`--from "2026-03-29T02:30": 2026-03-29 02:30 does not exist in Europe/Warsaw`, "(+01:00) to 03:00 (+02:00)"}},
		{[]string{"preview", "--tz", "Europe/Warsaw", "--from", "2026-10-25T02:30"},
			[]string{`--from "2026-10-25T02:30": 2026-10-25 02:30 happens 2 times in Europe/Warsaw (offsets +02:00 and +01:00)`, "2026-10-25T02:30:00+02:00 or 2026-10-25T02:30:00+01:00"}},
		{[]string{"run", "--tz", "Europe/Warsaw", "--until", "2025-03-30T02:30", "--db", filepath.Join(t.TempDir(), "x.db")},
			[]string{`--until "2025-03-30T02:30": 2025-03-30 02:30 does not exist in Europe/Warsaw`}},
	}
	for _, c := range cases {
		r := runGuarded(t, nil, c.args...)
		require.Equal(t, cli.ExitUsage, r.code, "%v: %s", c.args, r.stderr)
		for _, want := range c.want {
			require.Contains(t, r.stderr, want, c.args)
		}
	}
}

func TestOutOfRangeDurationsAndUntilAreFlagErrors(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	require.Equal(t, cli.ExitOK, run(t, clock, nil, "run", "--once", "--db", db).code)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--lease-ttl", "1ns"}, "--lease-ttl 1ns: must be between 1s and 24h0m0s"},
		{[]string{"--lease-ttl", "300000h"}, "--lease-ttl 300000h0m0s: must be between"},
		{[]string{"--catch-up-window", "300000h"}, "--catch-up-window 300000h0m0s: must be between"},
		{[]string{"--webhook-backoff", "0s"}, "--webhook-backoff 0s: must be between"},
		{[]string{"--until", "0001-01-01"}, `--until "0001-01-01": outside the years a cursor can hold`},
	}
	for _, c := range cases {
		r := runGuarded(t, clock, append([]string{"run", "--db", db}, c.args...)...)
		require.Equal(t, cli.ExitUsage, r.code, "%v: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, c.want)
	}
	// Behind every cursor: a no-op, said so.
	r := runGuarded(t, clock, "run", "--db", db, "--until", "2000-01-01")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stderr, "nothing to backfill up to 2000-01-01T00:00:00Z")
}

func TestFlagErrorsNameTheFlagAndExit2(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--once", "--db", db, "--catch-up", "minute=all", "--catch-up", "minute=skip"}, `invalid value "minute=skip" for flag -catch-up: given twice ("minute=all" and "minute=skip")`},
		{[]string{"run", "--once", "--once", "--db", db}, `flag once: given twice`},
		{[]string{"status", "--db", db, "--db", db}, `flag -db: given twice`},
		{[]string{"preview", "-n", "2", "-n", "3"}, `flag -n: given twice`},
		{[]string{"run", "--once", "--db", db, "--http", "127.0.0.1:0"}, `--http "127.0.0.1:0": serves only while "ticker run" keeps running, not with --once or --until`},
		{[]string{"run", "--db", db, "--until", "2026-11-21T10:00:00Z", "--http", "127.0.0.1:0"}, `--http "127.0.0.1:0"`},
		{[]string{"run", "--once", "--db", db, "--http", "127.0.0.1:99999"}, `--http "127.0.0.1:99999"`},
		{[]string{"run", "--once", "--db", db, "--webhook-attempts", "0"}, "--webhook-attempts 0: must be between 1 and 100000"},
		{[]string{"run", "--once", "--db", db, "--catch-up-max", "0"}, "--catch-up-max 0: must be between 1 and"},
		{[]string{"run", "--once", "--until", "2026-11-21T10:00:00Z", "--db", db}, `--once and --until "2026-11-21T10:00:00Z": choose one`},
		{[]string{"demo", "--orders", "0"}, "--orders 0"},
	}
	for _, c := range cases {
		r := runGuarded(t, clock, c.args...)
		require.Equal(t, cli.ExitUsage, r.code, "%v: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, c.want, c.args)
		require.Empty(t, r.stdout, c.args)
	}
}

func TestBadInputIsNamedAndFails(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--db", db, "--tz", "Mars/Olympus"}, `--tz "Mars/Olympus"`},
		{[]string{"run", "--db", db, "--units", "minute,fortnight"}, `"fortnight" is not a unit`},
		{[]string{"run", "--db", db, "--catch-up", "hour=sometimes"}, `policy "sometimes"`},
		{[]string{"run", "--db", "mysql://root@localhost/x"}, "--db"},
		{[]string{"run", "--db", "postgres://u@127.0.0.1:1/x?connect_timeout=2"}, "127.0.0.1:1"},
		{[]string{"run", "--db", db, "--until", "2030-01-01T00:00:00Z"}, "--until 2030-01-01T00:00:00Z is in the future"},
		{[]string{"run", "--db", db, "--until", "yesterday"}, `--until "yesterday"`},
		{[]string{"run", "--db", db, "--webhook", "ftp://example.com/hook"}, `--webhook "ftp://example.com/hook"`},
		{[]string{"run", "--db", db, "--catch-up-window", "-1h"}, "--catch-up-window"},
		{[]string{"run", "--db", db, "--http", "9090"}, `--http "9090"`},
		{[]string{"run", "--nonsense"}, "-nonsense"},
		{[]string{"status", "--db", db, "--tz", "Nowhere"}, `--tz "Nowhere"`},
		{[]string{"preview", "--unit", "fortnight"}, `--unit "fortnight"`},
		{[]string{"preview", "-n", "0"}, "-n 0"},
		{[]string{"preview", "--from", "soon"}, `--from "soon"`},
		{[]string{"preview", "-n", "abc"}, `invalid value "abc" for flag -n`},
		{[]string{"explode"}, `unknown command "explode"`},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			t.Parallel()
			r := run(t, clock, nil, c.args...)
			require.NotEqual(t, cli.ExitOK, r.code)
			require.Contains(t, r.stderr, c.want)
			require.Empty(t, r.stdout, "errors and their hints go to stderr")
		})
	}
}
