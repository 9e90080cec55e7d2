package cli_test

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
)

// leaseHolder reads the lease holder as status reports it ("" for none).
func leaseHolder(t *testing.T, clock clockwork.Clock, db string) string {
	t.Helper()
	r := run(t, clock, nil, "status", "--db", db, "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var report struct {
		Lease *struct{ Holder string } `json:"lease"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &report))
	if report.Lease == nil {
		return ""
	}
	return report.Lease.Holder
}

// A cron job on another host, a second after this one, can emit: --once and
// --until give the lease back when they stop.
func TestOnceAndUntilReleaseTheLease(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	first := run(t, clock, nil, "run", "--once", "--db", db, "--holder", "host-a")
	require.Equal(t, cli.ExitOK, first.code, first.stderr)
	require.Equal(t, "once: emitted 0 events; first run for minute, hour, day: the cursor starts at the latest boundary and the next run emits what passes after it; "+
		"cursors at minute 2026-11-21T12:00:00Z, hour 2026-11-21T12:00:00Z, day 2026-11-21T00:00:00Z; lease released; delivered 0 records\n", first.stderr)
	require.Empty(t, leaseHolder(t, clock, db))

	clock.Advance(time.Second)
	second := run(t, clock, nil, "run", "--once", "--db", db, "--holder", "host-b")
	require.Equal(t, cli.ExitOK, second.code, "host-b waited for host-a's lease: %s", second.stderr)
	require.Empty(t, leaseHolder(t, clock, db))

	clock.Advance(3 * time.Minute)
	backfill := run(t, clock, nil, "run", "--db", db, "--holder", "host-a", "--until", "2026-11-21T12:02:00Z")
	require.Equal(t, cli.ExitOK, backfill.code, backfill.stderr)
	require.Len(t, records(t, backfill.stdout), 2)
	require.Empty(t, leaseHolder(t, clock, db))
	third := run(t, clock, nil, "run", "--once", "--db", db, "--holder", "host-b")
	require.Equal(t, cli.ExitOK, third.code, "host-b waited for host-a's lease: %s", third.stderr)
	require.Contains(t, third.stderr, "once: emitted 1 event (minute 1); cursors at minute 2026-11-21T12:03:00Z")
}
