package cli_test

import (
	"path/filepath"
	"testing"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
)

// A flag the command would not use is a flag error naming it (exit 2),
// not a setting silently ignored; the same flag where it is used works.
func TestFlagsThatWouldBeIgnoredExit2(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	token := "0123456789abcdef0123"
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--once", "--db", db, "--webhook-attempts", "5"}, "--webhook-attempts: shapes the delivery to webhooks, and no --webhook is given"},
		{[]string{"run", "--once", "--db", db, "--webhook-attempts", "360"}, "--webhook-attempts: shapes the delivery to webhooks, and no --webhook is given"},
		{[]string{"run", "--once", "--db", db, "--webhook-backoff", "1s"}, "--webhook-backoff: shapes the delivery to webhooks, and no --webhook is given"},
		{[]string{"run", "--once", "--db", db, "--webhook-secret-env", "MY_SECRET"}, "--webhook-secret-env: shapes the delivery to webhooks, and no --webhook is given"},
		{[]string{"run", "--once", "--db", db, "--stdout"}, "--stdout: keeps stdout beside --webhook; without a --webhook, events go to stdout anyway"},
		{[]string{"run", "--db", db, "--until", "2026-11-21T11:00:00Z", "--stdout"}, "--stdout: keeps stdout beside --webhook"},
		{[]string{"run", "--once", "--db", db, "--stdout=false"}, "--stdout: keeps stdout beside --webhook; without a --webhook, events go to stdout anyway"},
		{[]string{"schedule", "trigger", "--db", db, "--webhook-backoff", "1s", "nightly"}, "--webhook-backoff: shapes the delivery to webhooks, and no --webhook is given"},
		{[]string{"run", "--once", "--db", db, "--catch-up", "minute=latest,hour=skip,day=skip", "--catch-up-window", "1h"}, `--catch-up-window: bounds the catch-up policy all, which --catch-up "minute=latest,hour=skip,day=skip" gives no unit`},
		{[]string{"run", "--once", "--db", db, "--units", "minute", "--catch-up", "minute=skip", "--catch-up-max", "5"}, `--catch-up-max: bounds the catch-up policy all`},
		{[]string{"run", "--once", "--db", db, "--admin-token", token}, `--admin-token: allows the dashboard's actions, and the dashboard is served only while "ticker run" keeps running with --http, not with --once or --until`},
		{[]string{"run", "--db", db, "--until", "2026-11-21T11:00:00Z", "--admin-token", token}, `--admin-token: allows the dashboard's actions`},
		{[]string{"run", "--db", db, "--admin-token", token}, "--admin-token: allows the dashboard's actions, and the dashboard is served only with --http"},
		{[]string{"run", "--db", db, "--until", "2026-11-21T11:00:00Z", "--schedules"}, "--schedules: a backfill (--until) re-emits boundaries only"},
		{[]string{"run", "--db", db, "--http", "127.0.0.1:99999"}, `--http "127.0.0.1:99999": want host:port with a port from 0 to 65535`},
	}
	for _, c := range cases {
		r := runGuarded(t, clock, c.args...)
		require.Equal(t, cli.ExitUsage, r.code, "%v: %s", c.args, r.stderr)
		require.Contains(t, r.stderr, c.want, c.args)
		require.Empty(t, r.stdout, c.args)
	}

	// Where they are used, the same flags are accepted.
	for _, args := range [][]string{
		{"run", "--once", "--db", db, "--catch-up", "minute=latest", "--catch-up-window", "1h", "--catch-up-max", "5"},
		{"run", "--db", db, "--until", "2026-11-21T11:00:00Z", "--schedules=false"},
	} {
		r := runGuarded(t, clock, args...)
		require.NotEqual(t, cli.ExitUsage, r.code, "%v: %s", args, r.stderr)
	}
}
