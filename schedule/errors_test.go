package schedule_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/schedule"
)

// TestOpenAndOptionErrorsNameWhatWasWrong: each bad argument of Open and
// each bad option value is refused with the error that names it, and an
// option's error is still an ErrInvalidSpec.
func TestOpenAndOptionErrorsNameWhatWasWrong(t *testing.T) {
	t.Parallel()
	db, _ := sqldbtest.SQLite(t)
	ctx := context.Background()
	handler := func(context.Context, *sqlx.Tx, schedule.Run) error { return nil }

	_, err := schedule.Open(ctx, nil, handler)
	require.ErrorIs(t, err, schedule.ErrNilDB)
	_, err = schedule.Open(ctx, db.DB, nil)
	require.ErrorIs(t, err, schedule.ErrNilHandler)

	for _, c := range []struct {
		opt  schedule.Option
		want error
		says string
	}{
		{schedule.WithClock(nil), schedule.ErrWithClockNil, "WithClock"},
		{schedule.WithSkipsRecordedTx(nil), schedule.ErrWithSkipsRecordedTxNil, "WithSkipsRecordedTx"},
		{schedule.WithLiveWindow(0), schedule.ErrWithLiveWindowOutOfRange, "got 0s"},
		{schedule.WithLiveWindow(schedule.MaxInterval + time.Second), schedule.ErrWithLiveWindowOutOfRange, "WithLiveWindow"},
		{schedule.WithMeterProvider(nil), schedule.ErrWithMeterProviderNil, "WithMeterProvider"},
		{schedule.WithTracerProvider(nil), schedule.ErrWithTracerProviderNil, "WithTracerProvider"},
	} {
		_, err := schedule.Open(ctx, db.DB, handler, c.opt)
		require.ErrorIs(t, err, c.want)
		require.ErrorIs(t, err, schedule.ErrInvalidSpec, "an option's error is an invalid spec, as it was")
		require.ErrorContains(t, err, c.says)
		for _, other := range []error{schedule.ErrWithClockNil, schedule.ErrWithSkipsRecordedTxNil, schedule.ErrWithLiveWindowOutOfRange,
			schedule.ErrWithMeterProviderNil, schedule.ErrWithTracerProviderNil} {
			if other != c.want {
				require.False(t, errors.Is(err, other), "%v is not %v", err, other)
			}
		}
	}
}
