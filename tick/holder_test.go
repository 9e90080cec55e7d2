package tick

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
)

// TestNewHolderIDIsUniquePerCall: two ids made by one process (as two
// containers whose processes are all pid 1 on hosts of one name would)
// differ, so the second replica is a standby, not a second emitter.
func TestNewHolderIDIsUniquePerCall(t *testing.T) {
	t.Parallel()
	a, b := NewHolderID(), NewHolderID()
	require.NotEqual(t, a, b)
	host, err := os.Hostname()
	require.NoError(t, err)
	require.Regexp(t, "^"+regexp.QuoteMeta(fmt.Sprintf("%s:%d:", host, os.Getpid()))+"[0-9a-f]{8}$", a)

	ctx := context.Background()
	store := NewMemoryStore()
	clock := clockwork.NewFakeClockAt(epoch)
	first, err := New(&recorder{}, store, WithClock(clock), WithLease(a, time.Minute))
	require.NoError(t, err)
	second, err := New(&recorder{}, store, WithClock(clock), WithLease(b, time.Minute))
	require.NoError(t, err)
	require.NoError(t, first.EmitDue(ctx))
	require.ErrorIs(t, second.EmitDue(ctx), ErrNotLeader)
}
