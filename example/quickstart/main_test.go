package main

import (
	"bytes"
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/passage-of-time/passage/tick"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestQuickstartCancelsTheUnpaidOrderAfterItsDeadline(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 21, 9, 0, 30, 0, time.UTC))
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan *tick.Ticker, 1)
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, filepath.Join(t.TempDir(), "q.db"), clock, &out, func(tk *tick.Ticker) { started <- tk })
	}()
	ticker := <-started

	// Due at 9:01:30: the 9:01 boundary is too early, 9:02 cancels it.
	require.NoError(t, tick.AdvanceAndWait(ctx, clock, time.Minute, ticker))
	require.NotContains(t, out.String(), "cancelled")
	require.NoError(t, tick.AdvanceAndWait(ctx, clock, time.Minute, ticker))
	require.Contains(t, out.String(), "order order-1 not paid by 9:01AM: cancelled\n")

	cancel()
	require.NoError(t, <-done)
}

func TestQuickstartSaysWhatFailed(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "no-such-directory", "q.db")
	err := run(context.Background(), missing, clockwork.NewFakeClock(), &syncBuffer{}, nil)
	require.ErrorContains(t, err, "open the to-do list: ")
}
