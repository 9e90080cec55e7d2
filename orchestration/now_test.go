package orchestration

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// Now and NewID after a suspension record nothing, so the next replay
// does not disagree with the history.
func TestNowAfterASuspensionRecordsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := sqldbtest.SQLite(t)
	clock := clockwork.NewFakeClockAt(t0)
	w := newWorld(t, db.DB, clock, func(e *Engine) {
		require.NoError(t, Register(e, "log", func(ctx Context, _ int) (int, error) {
			err := ctx.Sleep(time.Minute)
			_, _ = ctx.Now(), ctx.NewID() // logging before looking at err
			return 1, err
		}))
	})
	_, err := Start(ctx, w.e, "log", "i", 0)
	require.NoError(t, err)
	w.tick()
	clock.Advance(time.Minute)
	w.tick()
	_, st, err := Result[int](ctx, w.e, "i")
	require.NoError(t, err, "%s: %s", st.State, st.Error)
}
