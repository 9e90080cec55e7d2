package cli_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
)

// "ticker -h" lists every command and subcommand the binary has, and the
// README's packages table names the same.
func TestHelpAndReadmeListEveryCommand(t *testing.T) {
	t.Parallel()
	help := run(t, nil, nil, "-h")
	require.Equal(t, cli.ExitOK, help.code)
	readme, err := os.ReadFile("../../../../README.md")
	require.NoError(t, err)
	row := regexp.MustCompile("(?m)^\\| \\[`cmd/ticker`\\].*$").Find(readme)
	require.NotNil(t, row, "the packages table has a row for cmd/ticker")

	for _, name := range []string{"run", "status", "preview", "schedule", "workflow", "serve", "demo", "version"} {
		require.Regexp(t, `(?m)^  `+name+` `, help.stdout, "ticker -h lists %s", name)
		require.Contains(t, string(row), "`"+name, "the README's packages table lists %s", name)
		if name == "version" || name == "demo" {
			continue
		}
		// Each command answers -h and "help <command>" alike.
		h := run(t, nil, nil, name, "-h")
		require.Equal(t, cli.ExitOK, h.code, "%s -h: %s", name, h.stderr)
		typed := run(t, nil, nil, "help", name)
		require.Equal(t, cli.ExitOK, typed.code, "help %s: %s", name, typed.stderr)
		require.Equal(t, h.stdout, typed.stdout, "help %s is %s -h", name, name)
	}
	for parent, subs := range map[string][]string{
		"schedule": {"preview", "add", "list", "pause", "resume", "trigger", "backfill", "delete", "prune"},
		"workflow": {"list", "show", "signal", "cancel"},
	} {
		line := regexp.MustCompile(`(?m)^  ` + parent + ` .*$`).FindString(help.stdout)
		cell := regexp.MustCompile("`" + parent + ` ([^` + "`" + `]*)` + "`").FindStringSubmatch(string(row))
		require.NotNil(t, cell, "the README's row lists %s's subcommands", parent)
		for _, sub := range subs {
			require.Contains(t, line, sub, "ticker -h lists %s %s", parent, sub)
			require.Contains(t, strings.Split(cell[1], `\|`), sub, "the README's row lists %s %s", parent, sub)
			h := run(t, nil, nil, parent, sub, "-h")
			require.Equal(t, cli.ExitOK, h.code, "%s %s -h exists: %s", parent, sub, h.stderr)
		}
	}
}

// "ticker --version" and "ticker help run" work as people type them.
func TestVersionAndHelpAsPeopleTypeThem(t *testing.T) {
	t.Parallel()
	want := run(t, nil, nil, "version")
	for _, args := range [][]string{{"--version"}, {"-version"}, {"-v"}} {
		r := run(t, nil, nil, args...)
		require.Equal(t, cli.ExitOK, r.code, "%v: %s", args, r.stderr)
		require.Equal(t, want.stdout, r.stdout, args)
	}
	r := run(t, nil, nil, "help", "run")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.True(t, strings.HasPrefix(r.stdout, "Usage: ticker run "), r.stdout)
	require.Equal(t, cli.ExitUsage, run(t, nil, nil, "help", "nosuch").code)
}

func TestHelpAndVersionExitZero(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-h"}, {"run", "-h"}, {"status", "-h"}, {"preview", "-h"}, {"demo", "-h"}, {"version"}} {
		r := run(t, nil, nil, args...)
		require.Equal(t, cli.ExitOK, r.code, "%v: %s", args, r.stderr)
		require.NotEmpty(t, r.stdout, "%v", args)
	}
	require.Equal(t, cli.ExitUsage, run(t, nil, nil).code, "no command is a usage error")
}

// Every subcommand's -h lists its flags with their types and defaults,
// GNU-style since the commands are cobra's: "--db string" (Go's flag
// package printed "-db string" on a line of its own).
func TestHelpListsEveryFlagWithItsDefault(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"run"}, {"status"}, {"preview"}, {"serve"}, {"demo"},
		{"schedule", "preview"}, {"schedule", "add"}, {"schedule", "list"}, {"schedule", "pause"}, {"schedule", "resume"},
		{"schedule", "trigger"}, {"schedule", "backfill"}, {"schedule", "delete"},
		{"workflow", "list"}, {"workflow", "show"}, {"workflow", "signal"}, {"workflow", "cancel"},
	} {
		r := run(t, nil, nil, append(args, "-h")...)
		require.Equal(t, cli.ExitOK, r.code, "%v: %s", args, r.stderr)
		require.NotContains(t, r.stdout, "panic", "%v", args)
		require.Contains(t, r.stdout, "Flags:\n", "%v", args)
	}
	add := run(t, nil, nil, "schedule", "add", "-h").stdout
	for _, want := range []string{
		"      --db string ", `(default "passage.db")`, "      --jitter duration ", "      --overlap string ", `(default "allow")`,
		"      --max-runs int ", "      --catch-up-window duration ", "(default 168h0m0s)",
	} {
		require.Contains(t, add, want)
	}
	backfill := run(t, nil, nil, "schedule", "backfill", "-h").stdout
	for _, want := range []string{"      --from string ", "      --to string ", `(default "UTC")`, "      --webhook URL ", "(default 360)", "      --stdout "} {
		require.Contains(t, backfill, want)
	}
}
