package cli_test

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine running: a run
// or a relay not stopped by its test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start is where the tests' fake clocks begin: half a minute into 12:00
// UTC, so each minute they advance passes a boundary at :30.
var start = time.Date(2026, 11, 21, 12, 0, 30, 0, time.UTC)
