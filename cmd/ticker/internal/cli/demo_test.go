package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/orchestration"
)

// "demo --workflow" leaves instances in every state an order can reach —
// shipped, not paid in time, cancelled, awaiting payment — and the
// workflow commands read and change them. The states are checked against
// the orchestration engine's own reading of the histories, and against
// the story the demo is meant to tell.
func TestWorkflowDemoLeavesInstancesTheWorkflowCommandsWorkOn(t *testing.T) {
	t.Parallel()
	for engine, dsn := range databases(t) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			demo := run(t, nil, nil, "demo", "--workflow", "--db", dsn)
			require.Equal(t, cli.ExitOK, demo.code, demo.stderr)
			require.Contains(t, demo.stdout, "09:05  order-1 shipped as parcel-1: completed.\n")
			require.Contains(t, demo.stdout, "09:16  order-2 not paid within 15m0s: failed, its coffee released.\n")
			require.Contains(t, demo.stdout, "  ticker workflow list --db ")

			want := map[string]orchestration.State{
				"order-1": orchestration.Completed,
				"order-2": orchestration.Failed,
				"order-3": orchestration.Cancelled,
				"order-4": orchestration.Running,
				"order-5": orchestration.Running,
			}
			// The oracle: the engine's status of each history.
			ctx := context.Background()
			db, err := sqldb.Open(ctx, dsn)
			require.NoError(t, err)
			t.Cleanup(func() { _ = db.Close() })
			e, err := orchestration.New(ctx, db.DB, orchestration.WithClock(clockwork.NewFakeClockAt(time.Date(2026, 3, 29, 9, 20, 0, 0, time.UTC))))
			require.NoError(t, err)
			for id, state := range want {
				st, err := e.Status(ctx, id)
				require.NoError(t, err)
				require.Equal(t, state, st.State, id)
			}

			var listed []struct {
				ID, State    string
				WaitingUntil *string `json:"waiting_until"`
			}
			require.NoError(t, json.Unmarshal([]byte(ok(t, run(t, nil, nil, "workflow", "list", "--db", dsn, "--json"))), &listed))
			got := map[string]orchestration.State{}
			for _, l := range listed {
				got[l.ID] = orchestration.State(l.State)
				if l.State == string(orchestration.Running) {
					require.NotNil(t, l.WaitingUntil, "%s awaits its payment", l.ID)
				}
			}
			require.Equal(t, want, got)
			require.Contains(t, ok(t, run(t, nil, nil, "workflow", "show", "--db", dsn, "order-3")),
				"2026-03-29T09:06:00Z  v4  cancel requested\n")

			// The running ones take a signal and a cancel; an ended one
			// refuses both.
			require.Contains(t, ok(t, run(t, nil, nil, "workflow", "signal", "--db", dsn, "order-4", "paid", "--payload", `{"Reference": "card-4", "Amount": 250}`)), "signalled order-4: paid")
			require.Contains(t, ok(t, run(t, nil, nil, "workflow", "cancel", "--db", dsn, "order-5")), "cancel requested for order-5")
			refused := run(t, nil, nil, "workflow", "cancel", "--db", dsn, "order-1")
			require.Equal(t, cli.ExitError, refused.code)
			require.Contains(t, refused.stderr, "order-1 is completed")

			again := run(t, nil, nil, "demo", "--workflow", "--db", dsn)
			require.Equal(t, cli.ExitError, again.code)
			require.Contains(t, again.stderr, "not empty")
			require.Empty(t, again.stdout)
		})
	}
}

// Without --db, "demo --workflow" keeps its instances in orders.db in the
// working directory, where the commands it suggests look for them; the
// to-do list story's flags are refused beside it.
func TestWorkflowDemoDefaultsToOrdersDBAndRefusesTheStoryFlags(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	r := run(t, nil, nil, "demo", "--workflow")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "  ticker workflow list --db orders.db\n")
	_, err := os.Stat(filepath.Join(dir, "orders.db"))
	require.NoError(t, err)
	require.Contains(t, ok(t, run(t, nil, nil, "workflow", "list", "--db", "orders.db")), "order-5  order     running")

	for _, flag := range []string{"--orders=3", "--paid=1", "--seed=2"} {
		r := run(t, nil, nil, "demo", "--workflow", "--db", filepath.Join(dir, "new.db"), flag)
		require.Equal(t, cli.ExitUsage, r.code, flag)
		require.Contains(t, r.stderr, "not --workflow's")
	}
	_, err = os.Stat(filepath.Join(dir, "new.db"))
	require.True(t, os.IsNotExist(err), "a refused demo creates nothing")
}
