package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/todolist"
)

func TestStatusWarnsWhenTheZoneDiffersFromTheTickers(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	require.Equal(t, cli.ExitOK, run(t, clock, nil, "run", "--once", "--db", db, "--units", "hour", "--tz", "Asia/Kathmandu").code)

	same := run(t, clock, nil, "status", "--db", db, "--tz", "Asia/Kathmandu")
	require.NotContains(t, same.stdout, "warning")
	other := run(t, clock, nil, "status", "--db", db)
	require.Contains(t, other.stdout, "warning: the hour cursor 2026-11-21T11:15:00Z is not on a boundary of unit hour in UTC")
}

func TestStatusShowsEveryToDoList(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	path := filepath.Join(t.TempDir(), "passage.db")
	ctx := context.Background()
	db, err := sqldb.Open(ctx, path)
	require.NoError(t, err)
	defer db.Close()
	list, err := todolist.Open(ctx, db.DB, "pending-orders", todolist.WithListClock(clock))
	require.NoError(t, err)
	for i, due := range []time.Duration{-10 * time.Minute, -time.Minute, time.Hour} {
		require.NoError(t, list.Add(ctx, fmt.Sprintf("order-%d", i), start.Add(due)))
	}
	// A processor completes what was due a few minutes ago, in another process.
	proc, err := todolist.NewProcessor(list, func(context.Context, todolist.Item) error { return nil })
	require.NoError(t, err)
	_, err = proc.Process(ctx, start.Add(-5*time.Minute))
	require.NoError(t, err)

	r := run(t, clock, nil, "status", "--db", path, "--json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var report struct {
		Lists []struct {
			Name      string    `json:"name"`
			Pending   int       `json:"pending"`
			Due       int       `json:"due_now"`
			OldestDue time.Time `json:"oldest_due"`
			Lag       string    `json:"lag"`
			Completed int64     `json:"completed_total"`
		} `json:"todo_lists"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &report), r.stdout)
	require.Len(t, report.Lists, 1)
	l := report.Lists[0]
	require.Equal(t, "pending-orders", l.Name)
	require.Equal(t, 2, l.Pending)
	require.Equal(t, 1, l.Due)
	require.Equal(t, int64(1), l.Completed)
	require.True(t, l.OldestDue.Equal(start.Add(-time.Minute)))
	require.Equal(t, "1m0s", l.Lag)

	human := run(t, clock, nil, "status", "--db", path)
	require.Regexp(t, `pending-orders\s+2\s+1\s+0\s+2026-11-21T11:59:30Z\s+1m0s\s+1\s+0`, human.stdout)
}

// status --json says where "behind" stops counting, and gives a list with
// nothing due a null lag rather than text.
func TestStatusJSONShowsTheCapOfBehindAndNullForNoLag(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(start)
	db := filepath.Join(t.TempDir(), "passage.db")
	require.Equal(t, cli.ExitOK, run(t, clock, nil, "run", "--once", "--db", db, "--units", "minute").code)
	r := run(t, clock, nil, "schedule", "add", "--db", db, "--name", "later", "--spec", "@every 1h", "--command", "c")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	clock.Advance(200_000 * time.Minute) // more minutes behind than the cap
	st := run(t, clock, nil, "status", "--db", db, "--json")
	require.Equal(t, cli.ExitOK, st.code, st.stderr)
	var report struct {
		BehindCap int `json:"behind_cap"`
		Units     []struct {
			Behind       int  `json:"behind"`
			BehindCapped bool `json:"behind_capped"`
		} `json:"units"`
		Lists []struct {
			Name string  `json:"name"`
			Due  int     `json:"due_now"`
			Lag  *string `json:"lag"`
		} `json:"todo_lists"`
	}
	require.NoError(t, json.Unmarshal([]byte(st.stdout), &report), st.stdout)
	require.Equal(t, 100_000, report.BehindCap)
	require.Equal(t, 100_000, report.Units[0].Behind)
	require.True(t, report.Units[0].BehindCapped)
	require.Len(t, report.Lists, 1)
	require.Equal(t, 1, report.Lists[0].Due, "the hourly slot is due by now")
	require.NotNil(t, report.Lists[0].Lag)

	fresh := filepath.Join(t.TempDir(), "fresh.db")
	require.Equal(t, cli.ExitOK, run(t, clock, nil, "schedule", "add", "--db", fresh, "--name", "later", "--spec", "@every 1h", "--command", "c").code)
	require.Equal(t, cli.ExitOK, run(t, clock, nil, "run", "--once", "--db", fresh, "--units", "minute").code)
	st = run(t, clock, nil, "status", "--db", fresh, "--json")
	require.Contains(t, st.stdout, `"lag": null`, "nothing due: null, not text")
	require.Contains(t, st.stdout, `"behind_capped": false`)
}
