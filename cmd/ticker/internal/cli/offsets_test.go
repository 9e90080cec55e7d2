package cli_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
	"github.com/passage-of-time/passage/internal/timefmt"
)

// Africa/Monrovia kept local mean time, -00:44:30, until 1972.
func monrovia(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Africa/Monrovia")
	require.NoError(t, err)
	_, off := time.Date(1960, 1, 1, 0, 0, 0, 0, loc).Zone()
	require.Equal(t, -(44*60 + 30), off)
	return loc
}

func TestPreviewPrintsSecondsOffsetsThatParseBackToTheSameInstant(t *testing.T) {
	t.Parallel()
	loc := monrovia(t)
	r := run(t, nil, nil, "preview", "--unit", "day", "--tz", "Africa/Monrovia", "--from", "1960-01-01", "-n", "2")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 4, r.stdout)
	require.Equal(t, "Next 2 day boundaries in Africa/Monrovia after 1960-01-01T00:00:00-00:44:30:", lines[0])
	for i, line := range lines[2:] {
		printed := strings.Fields(line)[0]
		got, err := timefmt.Parse(printed)
		require.NoError(t, err)
		want := time.Date(1960, 1, 2+i, 0, 0, 0, 0, loc)
		require.True(t, got.Equal(want), "%s is %s, want %s", printed, got.UTC(), want.UTC())
	}
	// What preview prints is a valid --from naming the same instant.
	again := run(t, nil, nil, "preview", "--unit", "day", "--tz", "Africa/Monrovia", "--from", "1960-01-01T00:00:00-00:44:30", "-n", "2")
	require.Equal(t, r, again)
}

// checkLossless asserts that body's boundary is printed with the offset's
// seconds and reads back, as text and as a sink.Record, as want.
func checkLossless(t *testing.T, body []byte, want time.Time) {
	t.Helper()
	var raw map[string]any
	require.NoError(t, json.Unmarshal(body, &raw))
	data, _ := raw["data"].(map[string]any) // the CloudEvent's data (docs/events.md)
	printed, _ := data["boundary"].(string)
	require.True(t, strings.HasSuffix(printed, "-00:44:30"), "boundary %q", printed)
	parsed, err := timefmt.Parse(printed)
	require.NoError(t, err)
	require.True(t, parsed.Equal(want), "%s names %s, want %s", printed, parsed.UTC(), want.UTC())
	var rec sink.Record
	require.NoError(t, json.Unmarshal(body, &rec))
	require.True(t, rec.Boundary.Equal(want))
	_, off := rec.Boundary.Zone()
	require.Equal(t, -(44*60 + 30), off, "the offset survives too")
}

func TestJSONLinesCarrySecondsOffsetsLosslessly(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(time.Date(1971, 6, 1, 12, 0, 0, 0, time.UTC))
	db := filepath.Join(t.TempDir(), "passage.db")
	args := []string{"run", "--once", "--db", db, "--units", "minute", "--tz", "Africa/Monrovia"}
	require.Equal(t, cli.ExitOK, run(t, clock, nil, args...).code)
	clock.Advance(2 * time.Minute)
	r := run(t, clock, nil, args...)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	loc := monrovia(t)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 2, r.stdout)
	for i, line := range lines {
		// Monrovia's minutes start 30 s into a UTC minute: 11:16 and 11:17 local.
		checkLossless(t, []byte(line), time.Date(1971, 6, 1, 11, 16+i, 0, 0, loc))
	}
	require.Contains(t, r.stderr, "cursors at minute 1971-06-01T11:17:00-00:44:30")
}

func TestWebhooksCarrySecondsOffsetsLosslessly(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		bodies = append(bodies, body)
	}))
	t.Cleanup(srv.Close)
	clock := clockwork.NewFakeClockAt(time.Date(1971, 6, 1, 12, 0, 0, 0, time.UTC))
	db := filepath.Join(t.TempDir(), "passage.db")
	args := []string{"run", "--once", "--db", db, "--units", "minute", "--tz", "Africa/Monrovia", "--webhook", srv.URL}
	require.Equal(t, cli.ExitOK, run(t, clock, nil, args...).code)
	clock.Advance(2 * time.Minute)
	r := run(t, clock, nil, args...)
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	loc := monrovia(t)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, bodies, 2)
	for i, body := range bodies {
		checkLossless(t, body, time.Date(1971, 6, 1, 11, 16+i, 0, 0, loc))
	}
}
