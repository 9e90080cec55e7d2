package main_test

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
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

	// The first run sets the cursors; there is nothing due yet.
	ticker("run", "--once", "--db", db)
	status := ticker("status", "--db", db, "--json")
	var report struct {
		Units []struct{ Unit string } `json:"units"`
		Lease struct{ Holder string } `json:"lease"`
	}
	require.NoError(t, json.Unmarshal([]byte(status), &report), status)
	var units []string
	for _, u := range report.Units {
		units = append(units, u.Unit)
	}
	require.Equal(t, []string{"minute", "hour", "day"}, units)
	require.NotEmpty(t, report.Lease.Holder)

	human := ticker("status", "--db", db)
	require.True(t, strings.Contains(human, "UNIT") && strings.Contains(human, "to-do lists"), human)

	version := ticker("version")
	require.True(t, strings.HasPrefix(version, "ticker "), version)
}
