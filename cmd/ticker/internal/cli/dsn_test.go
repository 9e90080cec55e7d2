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

// dsnCommands are the commands that open --db, each as arguments that
// --db and its value are appended to: every one that can print a DSN.
var dsnCommands = [][]string{
	{"run", "--once"},
	{"status"},
	{"serve", "--http", "127.0.0.1:0"},
	{"demo"},
	{"schedule", "add", "--name", "n", "--spec", "@daily", "--command", "c"},
	{"schedule", "list"},
	{"schedule", "pause", "n"},
	{"schedule", "resume", "n"},
	{"schedule", "delete", "n"},
	{"schedule", "trigger", "n"},
	{"schedule", "backfill", "--from", "2026-01-01", "--to", "2026-01-02", "n"},
	{"schedule", "prune", "--older-than", "720h"},
	{"workflow", "list"},
	{"workflow", "show", "id"},
	{"workflow", "signal", "id", "go"},
	{"workflow", "cancel", "id"},
}

// withDB puts --db dsn before a command's trailing arguments (flags stop
// at the first argument that is not one).
func withDB(args []string, dsn string) []string {
	n := 1
	if args[0] == "schedule" || args[0] == "workflow" {
		n = 2
	}
	return append(append(append([]string{}, args[:n]...), "--db", dsn), args[n:]...)
}

// No command prints a password, whatever is in it: neither where the DSN
// parses as a URL (its password redacted) nor where it does not (a #, ?,
// a bad %-escape or a space in the password: the DSN was printed whole),
// nor in a key=value DSN, quoted or broken. Every host is 127.0.0.1 and
// every port 1, where nothing listens: a password with @ or / must not
// make a host to look up, and each connect fails at once.
func TestNoCommandPrintsAPassword(t *testing.T) {
	t.Parallel()
	// Each password is two markers around the character under test;
	// neither marker may appear in what a command prints.
	const before, after = "Zq9", "Wk7"
	var dsns []string
	for _, sep := range []string{"#", "?", "%zz", " ", "@", "/", ":", "%40", "'", `\`, ""} {
		pw := before + sep + after
		dsns = append(dsns,
			"postgres://postgres:"+pw+"@127.0.0.1:1/x?sslmode=disable",
			"postgresql://postgres:"+pw+"@127.0.0.1:1/x",
			"postgres://postgres@127.0.0.1:1/x?sslmode=disable&password="+pw,
			"host=127.0.0.1 port=1 user=postgres sslmode=disable dbname=x password="+pw,
			"host=127.0.0.1 port=1 user=postgres sslmode=disable password='"+strings.ReplaceAll(strings.ReplaceAll(pw, `\`, `\\`), "'", `\'`)+"' dbname=x",
		)
	}
	// A password of digits with an unencoded / reads, to pgx, as a port
	// and a database name: postgres://127.0.0.1:Zq9…/…Wk7@localhost/x is
	// user 127.0.0.1 with password "7391/8264" as meant, but host
	// 127.0.0.1, port 7391 and database "8264@localhost/x" as parsed.
	dsns = append(dsns, "postgres://127.0.0.1:7391/8264@localhost/x")
	dir := t.TempDir()
	for _, dsn := range dsns {
		before, after := before, after
		if strings.Contains(dsn, "7391") {
			before, after = "7391", "8264"
		}
		for _, args := range dsnCommands {
			args := withDB(args, dsn)
			r := run(t, nil, nil, args...)
			require.NotEqual(t, cli.ExitOK, r.code, "%q", args)
			out := r.stdout + r.stderr
			require.NotContains(t, out, before, "%q printed a password", args)
			require.NotContains(t, out, after, "%q printed a password", args)
		}
		// From $PASSAGE_DB too.
		r := run(t, nil, map[string]string{"PASSAGE_DB": dsn}, "status")
		require.NotEqual(t, cli.ExitOK, r.code)
		require.NotContains(t, r.stdout+r.stderr, before)
		require.NotContains(t, r.stdout+r.stderr, after)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries)
}

// A libpq key=value DSN is PostgreSQL: "ticker run" connects to the
// server it names (and says so when it cannot) instead of creating a
// SQLite file of that name, which is what it did, exiting 0, so that
// replicas given one each emitted from a file of their own. A DSN that is
// neither a URL ticker reads nor a plausible path is a flag error.
func TestAKeyValueDSNIsPostgres(t *testing.T) {
	t.Parallel()
	cwd, err := os.Getwd()
	require.NoError(t, err)
	kv := "host=127.0.0.1 port=1 user=postgres dbname=x sslmode=disable"
	for _, args := range [][]string{{"run", "--once"}, {"status"}, {"schedule", "list"}} {
		r := run(t, nil, nil, withDB(args, kv)...)
		require.Equal(t, cli.ExitError, r.code, "%v: %s", args, r.stderr)
		require.Contains(t, r.stderr, "127.0.0.1:1", args)
		require.Contains(t, r.stderr, "connect", args)
	}
	for dsn, want := range map[string]string{
		"postgres:broken":              `begins "postgres:", a URL scheme`,
		"postgresql:x@127.0.0.1/db":    `begins "postgresql:", a URL scheme`,
		"sqlite:passage.db":            `begins "sqlite:", a URL scheme`,
		"mysql://root@127.0.0.1/x":     "unsupported scheme",
		"host=127.0.0.1 port=notaport": "not a key=value DSN pgx can parse",
		"passage\n.db":                 "control character",
	} {
		for _, args := range dsnCommands {
			if args[0] == "demo" && !strings.Contains(dsn, "=") {
				continue // demo checks a SQLite path exists first; run covers Open
			}
			args := withDB(args, dsn)
			r := run(t, nil, nil, args...)
			require.Equal(t, cli.ExitUsage, r.code, "%q: %s", args, r.stderr)
			require.Contains(t, r.stderr, want, "%q", args)
		}
	}
	for _, name := range []string{"host=127.0.0.1 port=1 user=postgres dbname=x sslmode=disable", "postgres:broken", "sqlite:passage.db", "passage\n.db"} {
		_, err := os.Stat(filepath.Join(cwd, name))
		require.ErrorIs(t, err, os.ErrNotExist, "%q was created", name)
	}

	// A SQLite file whose name begins like a keyword is named with its
	// directory, and stays SQLite.
	db := filepath.Join(t.TempDir(), "host=x.db")
	r := run(t, nil, nil, "schedule", "add", "--db", db, "--name", "n", "--spec", "@daily", "--command", "c")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	_, err = os.Stat(db)
	require.NoError(t, err)
}

// $PASSAGE_DB is the default of --db for every command whose default is
// passage.db, and --db still wins; demo (whose default is a new temporary
// file) ignores it.
func TestPassageDBIsTheDefaultDB(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "from-env.db")
	env := map[string]string{"PASSAGE_DB": db}
	r := run(t, nil, env, "schedule", "add", "--name", "n", "--spec", "@daily", "--command", "c")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	r = run(t, nil, env, "schedule", "list")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "n ")
	other := filepath.Join(dir, "other.db")
	r = run(t, nil, env, "schedule", "list", "--db", other)
	require.NotEqual(t, cli.ExitOK, r.code)
	require.Contains(t, r.stderr, fmt.Sprintf("--db %s: no such database", other))
	r = run(t, nil, env, "status", "-h")
	require.Equal(t, cli.ExitOK, r.code)
	require.Contains(t, r.stdout, "PASSAGE_DB")
}
