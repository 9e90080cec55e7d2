package sink_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Webhooks run on net/http's goroutines; every test must leave none behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
