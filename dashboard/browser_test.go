package dashboard_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/browsertest"
)

// browser starts a headless Chromium for one test, or skips the test when
// none can be found. The flags keep it from reaching out to the network
// (updates, sync, field trials), which a closed network refuses.
func browser(t *testing.T, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	path := browsertest.Chromium()
	if path == "" {
		t.Skip("no Chromium found (install the Debian packages chromium and chromium-driver, or set PASSAGE_CHROMIUM): browser tests skipped")
	}
	opts := append(browsertest.Options(path, t.TempDir()), chromedp.WindowSize(1280, 900))
	opts = append(opts, extra...)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	// The first action starts the browser, which lives as long as the
	// context of that call: no timeout on it, one on what follows.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("about:blank")), "start Chromium at %s", path)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancel()
		cancelAlloc()
	})
	return ctx
}

// screenshots is where page screenshots go: $PASSAGE_SCREENSHOTS, or the
// test's temporary directory.
func screenshots(t *testing.T) string {
	if dir := os.Getenv("PASSAGE_SCREENSHOTS"); dir != "" {
		require.NoError(t, os.MkdirAll(dir, 0o755))
		return dir
	}
	return t.TempDir()
}

// shoot saves a full-page screenshot as name.png.
func shoot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	// Quality 100 is what makes chromedp capture PNG rather than JPEG.
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	path := filepath.Join(screenshots(t), name+".png")
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("screenshot: %s", path)
}

// submit runs action, which sends a form, and waits for the page its
// answer loads to show #done. Waiting for #done alone could find it on the
// page before, which the previous action left: the test then went on
// while the form was still in flight (a navigation aborted by the next
// one, or a check made before the action happened).
func submit(t *testing.T, ctx context.Context, action chromedp.Action[chromedp.Void]) {
	t.Helper()
	_, err := chromedp.RunResponse(ctx, action)
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS("#done"))))
}

// text returns the text of the first element sel matches, once visible.
func text(t *testing.T, ctx context.Context, url, sel string) string {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(sel))))
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	require.NoError(t, err)
	return s
}

// hovered returns what hovering each time in the first element sel
// matches shows (its title, the exact instant), one a line: the pages
// print times relative to now.
func hovered(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelector(`+"`"+sel+"`"+`).querySelectorAll("time")].map(e => e.title)`))
	require.NoError(t, err)
	return strings.Join(s, "\n")
}

// until waits for a JavaScript condition to hold across page loads: a
// Poll ends with its page, so each check is its own evaluation, and an
// error while a page is being replaced only means "not yet".
func until(t *testing.T, ctx context.Context, condition string) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](condition)); err == nil && ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", condition, ctx.Err())
		case <-tick.C:
		}
	}
}

// login opens url and logs in with token.
func login(t *testing.T, ctx context.Context, url, token string) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("#login")),
		chromedp.SendKeys(chromedp.CSS(`#login input[name=token]`), token)))
	// Until the answer's page has loaded, the login page is still there.
	_, err := chromedp.RunResponse(ctx, chromedp.Submit(chromedp.CSS(`#login`)))
	require.NoError(t, err)
}

// confirmFirst runs action, a click on a button that cannot be undone,
// and waits for the page that asks first.
func confirmFirst(t *testing.T, ctx context.Context, action chromedp.Action[chromedp.Void]) {
	t.Helper()
	_, err := chromedp.RunResponse(ctx, action)
	require.NoError(t, err)
	asks, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("#confirm") !== null`))
	require.NoError(t, err)
	require.True(t, asks, "the button did not ask first")
}
