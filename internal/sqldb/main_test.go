package sqldb_test

import (
	"testing"

	"go.uber.org/goleak"
)

// database/sql starts a goroutine per open handle; a handle left open by Open
// on an error path would show up here.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
