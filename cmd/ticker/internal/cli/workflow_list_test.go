package cli_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/orchestration"
	"github.com/passage-of-time/passage/todolist"
)

// shipment sleeps an hour, ships — by courier when patched and the
// instance takes the new branch of "courier", by post otherwise —, and
// sleeps hours twice more.
func shipment(patched bool) func(orchestration.Context, int) (string, error) {
	return func(ctx orchestration.Context, hours int) (string, error) {
		if err := ctx.Sleep(time.Hour); err != nil {
			return "", err
		}
		by := "post"
		if patched && orchestration.Patched(ctx, "courier") {
			by = "courier"
		}
		if _, err := orchestration.Step(ctx, "ship", func(context.Context, orchestration.StepInfo) (string, error) { return by, nil }); err != nil {
			return "", err
		}
		for range 2 {
			if err := ctx.Sleep(time.Duration(hours) * time.Hour); err != nil {
				return "", err
			}
		}
		return by, nil
	}
}

// deployShipment opens an engine running shipment on dsn: a process of
// one deploy.
func deployShipment(t *testing.T, dsn string, clock clockwork.Clock, patched bool) (*orchestration.Engine, *todolist.Processor) {
	t.Helper()
	db, err := sqldb.Open(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	e, err := orchestration.New(context.Background(), db.DB, orchestration.WithClock(clock))
	require.NoError(t, err)
	require.NoError(t, orchestration.Register(e, "ship", shipment(patched)))
	p, err := e.Processor()
	require.NoError(t, err)
	return e, p
}

// list --patch and --without-patch tell which running instances took a
// patch's new branch and which may still need the old one: passed
// shipped before the patch and woke after it (old), asleep shipped
// before it and sleeps on (-, its history cannot say yet), waiting was
// before the point at the deploy and took the new branch.
func TestWorkflowListTellsTheSidesOfAPatch(t *testing.T) {
	t.Parallel()
	for engine, dsn := range databases(t) {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			clock := clockwork.NewFakeClockAt(orderStart)
			tick := func(p *todolist.Processor) {
				_, err := p.Process(ctx, clock.Now())
				require.NoError(t, err)
			}
			old, oldP := deployShipment(t, dsn, clock, false)
			for id, hours := range map[string]int{"passed": 1, "asleep": 50} {
				_, err := orchestration.Start(ctx, old, "ship", id, hours)
				require.NoError(t, err)
			}
			tick(oldP)
			clock.Advance(time.Hour)
			_, err := orchestration.Start(ctx, old, "ship", "waiting", 1)
			require.NoError(t, err)
			tick(oldP) // passed and asleep ship by post; waiting sleeps before the point
			cmd := func(args ...string) result {
				return run(t, clock, nil, append([]string{"workflow", "list", "--db", dsn}, args...)...)
			}
			require.Equal(t, "no workflows with patch courier (of 3)\n", ok(t, cmd("--patch", "courier")))

			_, patchedP := deployShipment(t, dsn, clock, true)
			clock.Advance(time.Hour)
			tick(patchedP) // passed notes its old branch; waiting takes the new one
			require.Regexp(t, `^ID\s+WORKFLOW\s+STATE\s+STARTED\s+WAITING UNTIL\s+PATCH courier\s+ERROR\n`+
				`asleep\s+ship\s+running\s+2026-05-01T09:00:00Z\s+2026-05-03T12:00:00Z\s+-\s+-\n`+
				`passed\s+ship\s+running\s+2026-05-01T09:00:00Z\s+2026-05-01T12:00:00Z\s+old\s+-\n$`,
				ok(t, cmd("--without-patch", "courier", "--state", "running")))
			require.Regexp(t, `^ID.*PATCH courier\s+ERROR\n`+
				`waiting\s+ship\s+running\s+2026-05-01T10:00:00Z\s+2026-05-01T12:00:00Z\s+new\s+-\n$`,
				ok(t, cmd("--patch", "courier", "--state", "running")))
			require.Equal(t, "no completed workflows without patch courier (of 3)\n", ok(t, cmd("--without-patch", "courier", "--state", "completed")))

			var listed []struct {
				ID          string   `json:"id"`
				Patches     []string `json:"patches"`
				OldBranches []string `json:"old_branches"`
			}
			require.NoError(t, json.Unmarshal([]byte(ok(t, cmd("--json"))), &listed))
			require.Len(t, listed, 3)
			for _, l := range listed {
				want := map[string][2][]string{"asleep": {{}, {}}, "passed": {{}, {"courier"}}, "waiting": {{"courier"}, {}}}[l.ID]
				require.Equal(t, want, [2][]string{l.Patches, l.OldBranches}, l.ID)
			}

			for _, args := range [][]string{{"--patch", "courier", "--without-patch", "courier"}, {"--patch", ""}, {"--without-patch="}} {
				r := cmd(args...)
				require.Equal(t, cli.ExitUsage, r.code, "%q: %s", args, r.stdout)
			}
		})
	}
}
