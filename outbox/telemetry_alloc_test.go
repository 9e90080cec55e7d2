package outbox

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/internal/telemetrytest"
)

// Recording costs no allocation without an SDK: with the global provider
// none was installed in, and with the API's no-op one. (The gauges are
// read only when an SDK collects.)
func TestRecordingWithoutAnSDKAllocatesNothing(t *testing.T) {
	db, _ := sqldbtest.SQLite(t)
	ctx := context.Background()
	for name, p := range telemetrytest.WithoutAnSDK() {
		o, err := Open(ctx, db.DB, WithMeterProvider(p.Meters))
		require.NoError(t, err)
		allocs := testing.AllocsPerRun(100, func() {
			o.ins.prunedRecords(ctx, 500)
		})
		require.Zero(t, allocs, name)
	}
}
