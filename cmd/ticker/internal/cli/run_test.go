package cli_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
	"github.com/passage-of-time/passage/tick"
)

func TestRunPublishesJSONLinesAndSavesTheCursorOnSignal(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	r := startRun(t, clock, "--db", db, "--units", "minute")
	for range 3 {
		require.NoError(t, tick.AdvanceAndWait(context.Background(), clock, time.Minute, r.ticker))
	}
	require.Equal(t, cli.ExitOK, r.stop(), r.stderr.String())

	recs := records(t, r.stdout.String())
	require.Equal(t, []string{"12:01", "12:02", "12:03"}, boundaries(recs))
	for i, r := range recs {
		require.Equal(t, "MinuteHasPassed", r.Type)
		require.Equal(t, tick.Minute, r.Unit)
		require.False(t, r.CatchUp, "emitted on time")
		if i > 0 {
			require.Equal(t, *recs[i-1].Boundary, *r.Previous)
		}
	}

	status := run(t, clock, nil, "status", "--db", db, "--json")
	require.Equal(t, cli.ExitOK, status.code, status.stderr)
	var report struct {
		Units []struct {
			Unit   string    `json:"unit"`
			Cursor time.Time `json:"cursor"`
		} `json:"units"`
	}
	require.NoError(t, json.Unmarshal([]byte(status.stdout), &report))
	require.Len(t, report.Units, 1)
	require.Equal(t, "minute", report.Units[0].Unit)
	require.True(t, report.Units[0].Cursor.Equal(recs[2].Boundary.Time), "the cursor was saved at the last emitted boundary")
}

func TestOnceTwiceEmitsExactlyTheBoundariesInBetween(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	once := func() []sink.Record {
		r := run(t, clock, nil, "run", "--once", "--db", db, "--units", "minute,hour")
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		return records(t, r.stdout)
	}
	first := once()
	clock.Advance(75 * time.Minute) // 12:00:30 → 13:15:30
	second := once()
	third := once()

	seen := map[string]bool{}
	for _, r := range append(first, second...) {
		require.False(t, seen[r.ID], "%s emitted twice", r.ID)
		seen[r.ID] = true
	}
	var minutes, hours int
	for _, r := range second {
		require.True(t, r.Boundary.After(start) && !r.Boundary.After(clock.Now()), "boundary %s outside (first run, second run]", r.Boundary)
		switch r.Unit {
		case tick.Minute:
			minutes++
		case tick.Hour:
			hours++
		}
	}
	require.Equal(t, 75, minutes, "12:01 … 13:15")
	require.Equal(t, 1, hours, "13:00")
	require.Empty(t, third, "nothing passed since the second run")
}

func TestUntilBackfillsToAPastInstant(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	require.Equal(t, cli.ExitOK, run(t, clock, nil, "run", "--once", "--db", db, "--units", "hour").code)
	clock.Advance(5 * time.Hour)
	r := run(t, clock, nil, "run", "--db", db, "--units", "hour", "--until", "2026-11-21T15:00:00Z")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Equal(t, []string{"13:00", "14:00", "15:00"}, boundaries(records(t, r.stdout)))
}

func TestUntilWithNothingToBackfillSaysSoAndSucceeds(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	require.Equal(t, cli.ExitOK, run(t, clock, nil, "run", "--once", "--db", db, "--units", "hour").code)
	r := run(t, clock, nil, "run", "--db", db, "--units", "hour", "--until", "2026-11-21T09:00:00Z")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Empty(t, r.stdout)
	require.Contains(t, r.stderr, "nothing to backfill up to 2026-11-21T09:00:00Z")
}
