package main_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/tick"
)

// TestBinary builds the ticker and runs the commands the README shows
// against a fresh database, as a user on a clean checkout would.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "ticker")
	build := exec.Command("go", "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	db := filepath.Join(dir, "passage.db")

	ticker := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, args...).Output()
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		require.NoError(t, err, "ticker %v: %s", args, stderr)
		return string(out)
	}

	demo := ticker("demo")
	require.Contains(t, demo, "Every deadline is behind us.")
	require.Regexp(t, `cancelled by timeout\s+10`, demo)

	preview := ticker("preview", "--unit", "day", "--tz", "Europe/Warsaw", "--from", "2026-10-24", "-n", "3")
	require.Regexp(t, `2026-10-25T00:00:00\+02:00\s+Sun\s+25h0m0s`, preview, "the fall-back day lasts 25 hours")

	// A ticker that last ran three minutes ago catches up on --once.
	seedCursor(t, db, tick.Minute, time.Now().Truncate(time.Minute).Add(-3*time.Minute))
	var boundaries []time.Time
	for line := range strings.Lines(ticker("run", "--once", "--db", db)) {
		var rec sink.Record
		require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
		if rec.Unit == tick.Minute {
			require.True(t, rec.CatchUp || rec.Boundary.After(time.Now().Add(-time.Minute)))
			boundaries = append(boundaries, rec.Boundary.Time)
		}
	}
	require.GreaterOrEqual(t, len(boundaries), 3, "the three missed minutes, in order")
	for i := 1; i < len(boundaries); i++ {
		require.Equal(t, time.Minute, boundaries[i].Sub(boundaries[i-1]))
	}
	status := ticker("status", "--db", db, "--json")
	var report struct {
		Units []struct{ Unit string }  `json:"units"`
		Lease *struct{ Holder string } `json:"lease"`
	}
	require.NoError(t, json.Unmarshal([]byte(status), &report), status)
	var units []string
	for _, u := range report.Units {
		units = append(units, u.Unit)
	}
	require.Equal(t, []string{"minute", "hour", "day"}, units)
	require.Nil(t, report.Lease, "--once released its lease")

	human := ticker("status", "--db", db)
	require.True(t, strings.Contains(human, "UNIT") && strings.Contains(human, "to-do lists"), human)

	version := ticker("version")
	require.True(t, strings.HasPrefix(version, "ticker "), version)
}

// seedCursor records a unit's cursor as a ticker that last ran at `at` would.
func seedCursor(t *testing.T, path string, u tick.Unit, at time.Time) {
	t.Helper()
	ctx := context.Background()
	db, err := sqldb.Open(ctx, path)
	require.NoError(t, err)
	defer db.Close()
	store, err := tick.NewSQLStore(ctx, db.DB)
	require.NoError(t, err)
	require.NoError(t, store.Advance(ctx, u, time.Time{}, at, 0))
}
