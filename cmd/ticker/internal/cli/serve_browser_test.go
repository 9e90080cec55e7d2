package cli_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
	"github.com/passage-of-time/passage/internal/browsertest"
)

// Issue 27 point 3 in a browser: a page of "ticker serve" left open on a
// quiescent database shows, at its next refresh, a schedule another
// process added and paused after serve started — serve opened the file
// immutable before, and the page stayed on the old state for good.
func TestBrowserServePageShowsWritesAtItsNextRefresh(t *testing.T) {
	t.Parallel()
	path := browsertest.Chromium()
	if path == "" {
		t.Skip("no Chromium found (Debian packages chromium and chromium-driver, or $PASSAGE_CHROMIUM): browser test skipped")
	}
	clock := clockwork.NewFakeClockAt(start)
	db := tickerDB(t, clock) // closed: a quiescent WAL file
	s := startServe(t, clock, nil, "--db", db)
	defer func() { require.Equal(t, cli.ExitOK, s.stop(t), s.stderr.String()) }()

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), browsertest.Options(path, t.TempDir())...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("about:blank")), "start Chromium at %s", path)
	ctx, cancelTimeout := context.WithTimeout(ctx, time.Minute)
	defer cancelTimeout()

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(s.base+"/schedules")))
	before, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
	require.NoError(t, err)
	require.NotContains(t, before, "nightly-export")

	ok(t, run(t, clock, nil, "schedule", "add", "--db", db, "--name", "nightly-export", "--spec", "@every 5m", "--command", "export"))
	ok(t, run(t, clock, nil, "schedule", "pause", "--db", db, "nightly-export"))
	// The page reloads itself every 10 s: no navigation from the test.
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#schedule-nightly-export .tag.paused`))),
		"the open page shows the schedule added and paused after serve started")
	row, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#schedule-nightly-export`)))
	require.NoError(t, err)
	require.Contains(t, row, "nightly-export")
}
