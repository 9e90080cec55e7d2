package orchestration_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"
	_ "github.com/mattn/go-sqlite3"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/orchestration"
)

// order charges, awaits shipping for 3 days and refunds if nothing came.
func order(ctx orchestration.Context, id string) (string, error) {
	if _, err := orchestration.Step(ctx, "charge", func(context.Context, orchestration.StepInfo) (string, error) { return "ch_" + id, nil }); err != nil {
		return "", err
	}
	_, shipped, err := orchestration.Await[string](ctx, "shipped", 72*time.Hour)
	if err != nil || shipped {
		return "shipped", err
	}
	if _, err := orchestration.Step(ctx, "refund", func(context.Context, orchestration.StepInfo) (bool, error) { return true, nil }); err != nil {
		return "", err
	}
	return "refunded", nil
}

// A history exported from a database replays against the same code, and
// a changed workflow is caught before a deploy, in a test that needs no
// database.
func TestExportedHistoriesReplayAgainstNewCode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sqlx.Open("sqlite3", filepath.Join(t.TempDir(), "p.db")+"?_journal_mode=WAL&_busy_timeout=10000&_txlock=immediate")
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	clock := clockwork.NewFakeClockAt(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
	e, err := orchestration.New(ctx, db, orchestration.WithClock(clock))
	require.NoError(t, err)
	require.NoError(t, orchestration.Register(e, "order", order))
	p, err := e.Processor()
	require.NoError(t, err)
	for _, id := range []string{"done", "waiting"} {
		_, err = orchestration.Start(ctx, e, "order", id, id)
		require.NoError(t, err)
	}
	_, err = p.Process(ctx, clock.Now())
	require.NoError(t, err)
	clock.Advance(73 * time.Hour)
	_, err = orchestration.Start(ctx, e, "order", "later", "later") // still awaiting when exported
	require.NoError(t, err)
	_, err = p.Process(ctx, clock.Now()) // "done" and "waiting" refund; "later" awaits
	require.NoError(t, err)
	done, err := e.ExportHistory(ctx, "done")
	require.NoError(t, err)
	waiting, err := e.ExportHistory(ctx, "later")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(t.TempDir(), "done.json"), done, 0o600), "kept as test data")

	require.NoError(t, orchestration.ReplayHistory(order, done))
	require.NoError(t, orchestration.ReplayHistory(order, waiting))

	renamed := func(ctx orchestration.Context, id string) (string, error) {
		if _, err := orchestration.Step(ctx, "charge card", func(context.Context, orchestration.StepInfo) (string, error) { return "", nil }); err != nil {
			return "", err
		}
		return "", nil
	}
	err = orchestration.ReplayHistory(renamed, done)
	require.ErrorIs(t, err, orchestration.ErrNondeterministic)
	require.ErrorContains(t, err, `the code asks for Step "charge card" where the history (event 1 of its decisions) has Step "charge"`)

	moreSteps := func(ctx orchestration.Context, id string) (string, error) {
		out, err := order(ctx, id)
		if err != nil {
			return "", err
		}
		_, err = orchestration.Step(ctx, "notify", func(context.Context, orchestration.StepInfo) (bool, error) { return true, nil })
		return out, err
	}
	require.ErrorContains(t, orchestration.ReplayHistory(moreSteps, done), "the history ended (completed) where the code goes on")
	require.NoError(t, orchestration.ReplayHistory(moreSteps, waiting), "a running instance may go on into new code")

	fewer := func(ctx orchestration.Context, id string) (string, error) { return "nothing", nil }
	require.ErrorContains(t, orchestration.ReplayHistory(fewer, done), "the code ended before Step \"charge\"")
	require.ErrorIs(t, orchestration.ReplayHistory(order, []byte("not json")), orchestration.ErrInvalidArgument)
}
