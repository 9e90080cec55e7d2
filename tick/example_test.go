package tick_test

import (
	"context"
	"fmt"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/passage-of-time/passage/tick"
)

// printer is a Publisher that prints the hours passing.
type printer struct{}

func (printer) Publish(_ context.Context, events ...any) error {
	for _, e := range events {
		if h, ok := e.(tick.HourHasPassed); ok {
			fmt.Printf("%s passed (catch-up %v)\n", h.At.Format("15:04 MST"), h.CatchUp)
		}
	}
	return nil
}

// A ticker in Warsaw on the night the clocks go forward: 02:00 never
// shows, so no hour passes at 02:00. A fake clock and AdvanceAndWait run
// three hours through the same path production uses.
func ExampleTicker() {
	ctx := context.Background()
	warsaw, _ := time.LoadLocation("Europe/Warsaw")
	clock := clockwork.NewFakeClockAt(time.Date(2026, 3, 29, 0, 30, 0, 0, warsaw))

	ticker, err := tick.New(printer{}, tick.NewMemoryStore(),
		tick.WithClock(clock), tick.WithLocation(warsaw), tick.WithUnits(tick.Hour))
	if err != nil {
		panic(err)
	}
	if err := ticker.Start(ctx); err != nil {
		panic(err)
	}
	defer ticker.Stop(ctx)

	// One hour at a time, then two at once, as if the machine slept.
	if err := tick.AdvanceAndWait(ctx, clock, time.Hour, ticker); err != nil {
		panic(err)
	}
	if err := tick.AdvanceAndWait(ctx, clock, 2*time.Hour, ticker); err != nil {
		panic(err)
	}
	// Output:
	// 01:00 CET passed (catch-up false)
	// 03:00 CEST passed (catch-up true)
	// 04:00 CEST passed (catch-up false)
}

// Boundaries are calendar arithmetic, exported for previews.
func ExampleNext() {
	saoPaulo, _ := time.LoadLocation("America/Sao_Paulo")
	evening := time.Date(2018, 11, 3, 18, 0, 0, 0, saoPaulo)
	// Midnight did not exist on 2018-11-04: the day began at 01:00.
	fmt.Println(tick.Next(tick.Day, evening, saoPaulo))
	// Output:
	// 2018-11-04 01:00:00 -0200 -02
}
