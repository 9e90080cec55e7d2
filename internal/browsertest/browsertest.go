package browsertest

import (
	"os"
	"os/exec"

	"github.com/chromedp/chromedp"
)

// Chromium finds a Chromium to drive: $PASSAGE_CHROMIUM, then the Debian
// package's binary, then the usual names on PATH; "" when there is none
// (the tests skip).
func Chromium() string {
	if p := os.Getenv("PASSAGE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Options are the allocator options of a headless Chromium at path with
// its profile in userDataDir. The flags keep it from reaching out to the
// network (updates, sync, field trials), which a closed network refuses.
func Options(path, userDataDir string) []chromedp.ExecAllocatorOption {
	return []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(userDataDir),
	}
}
