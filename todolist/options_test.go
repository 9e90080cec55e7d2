package todolist_test

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/todolist"
)

// An option given an unusable value fails its constructor with
// ErrInvalidOption, and the error names the option.
func TestOptionErrorsNameTheOption(t *testing.T) {
	db, _ := sqldbtest.SQLite(t)
	ctx := context.Background()
	_, err := todolist.Open(ctx, db.DB, "options", todolist.WithListClock(nil))
	require.ErrorIs(t, err, todolist.ErrInvalidOption)
	require.ErrorContains(t, err, "WithListClock")
	for name, opt := range map[string]todolist.ListOption{
		"WithMeterProvider":  todolist.WithMeterProvider(nil),
		"WithTracerProvider": todolist.WithTracerProvider(nil),
	} {
		_, err := todolist.Open(ctx, db.DB, "options", opt)
		require.ErrorIs(t, err, todolist.ErrInvalidOption, name)
		require.ErrorContains(t, err, "invalid option "+name+":", name)
	}

	l, err := todolist.Open(ctx, db.DB, "options")
	require.NoError(t, err)
	for name, opt := range map[string]todolist.ProcessorOption{
		"WithClock":       todolist.WithClock(nil),
		"WithBatchSize":   todolist.WithBatchSize(0),
		"WithLease":       todolist.WithLease(0),
		"WithMaxAttempts": todolist.WithMaxAttempts(0),
		"WithBackoff":     todolist.WithBackoff(time.Hour, time.Minute),
		"WithMaxItems":    todolist.WithMaxItems(0),
		"WithTimeBudget":  todolist.WithTimeBudget(-time.Second),
		"WithWorkers":     todolist.WithWorkers(0),
	} {
		_, err := todolist.NewProcessor(l, succeed, opt)
		require.ErrorIs(t, err, todolist.ErrInvalidOption, name)
		require.ErrorContains(t, err, "invalid option "+name+":", name)
	}
	// Workers are refused for an action that is not transactional.
	_, err = todolist.NewProcessor(l, succeed, todolist.WithWorkers(2))
	require.ErrorIs(t, err, todolist.ErrInvalidOption)
	require.ErrorContains(t, err, "invalid option WithWorkers:")

	p, err := todolist.NewProcessor(l, succeed, todolist.WithClock(clockwork.NewFakeClock()))
	require.NoError(t, err)
	_, err = todolist.NewRunner(p, todolist.WithMaxWait(0))
	require.ErrorIs(t, err, todolist.ErrInvalidOption)
	require.ErrorContains(t, err, "invalid option WithMaxWait:")
}
