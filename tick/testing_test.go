package tick

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
)

// TestAdvanceAndWaitRefusesATickerOnAnotherClock: a ticker on the real
// clock never sees a fake clock's advance; AdvanceAndWait says so at once
// instead of waiting for a pass that cannot come.
func TestAdvanceAndWaitRefusesATickerOnAnotherClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	real, err := New(&recorder{}, NewMemoryStore(), WithUnits(Day), WithLogger(discard))
	require.NoError(t, err)
	require.NoError(t, real.Start(ctx))
	t.Cleanup(func() { require.NoError(t, real.Stop(ctx)) })
	fake := clockwork.NewFakeClockAt(epoch)
	other, _ := setup(t, clockwork.NewFakeClockAt(epoch), NewMemoryStore(), WithUnits(Day))

	// The deadline only bounds a hang, which is the failure.
	waitCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err = AdvanceAndWait(waitCtx, fake, time.Hour, real)
	require.ErrorIs(t, err, ErrWrongClock)
	require.ErrorContains(t, err, "WithClock(clock)")
	require.ErrorIs(t, AdvanceAndWait(ctx, fake, time.Hour, other), ErrWrongClock, "another fake clock")
	require.ErrorIs(t, AdvanceAndWait(ctx, nil, time.Hour, other), ErrWrongClock)
	require.Equal(t, epoch, fake.Now(), "nothing was advanced")
}
