package schedule_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"
	_ "github.com/mattn/go-sqlite3" // the embedded database

	"github.com/passage-of-time/passage/schedule"
)

// A weekly report and an every-8-hours poll, stored in SQLite and fired by
// the schedules' to-do list; the poll is reprogrammed to every hour while
// running. The fake clock stands in for the passage of time: in a real
// program a ticker's MinuteHasPassed drives the processor
// (bus.Subscribe(b, todolist.Handler[tick.MinuteHasPassed](p))).
func ExampleScheduler() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "schedules")
	defer os.RemoveAll(dir)
	db, err := sqlx.Open("sqlite3", filepath.Join(dir, "passage.db")+"?_journal_mode=WAL&_busy_timeout=10000&_txlock=immediate")
	if err != nil {
		panic(err)
	}
	defer db.Close()

	warsaw, _ := time.LoadLocation("Europe/Warsaw")
	clock := clockwork.NewFakeClockAt(time.Date(2026, 3, 27, 0, 0, 0, 0, warsaw))
	send := func(_ context.Context, _ *sqlx.Tx, run schedule.Run) error {
		fmt.Printf("%s %-7s %s\n", run.Slot.In(warsaw).Format("Mon 01-02 15:04 -07"), run.Command, run.SlotID)
		return nil
	}
	s, err := schedule.Open(ctx, db, send, schedule.WithClock(clock))
	if err != nil {
		panic(err)
	}
	weekly, _ := schedule.Cron("0 12 * * FRI", warsaw)
	every8h, _ := schedule.Every(8*time.Hour, clock.Now())
	defs := []schedule.Definition{
		{Name: "weekly-report", Spec: weekly, Command: "report"},
		{Name: "poll", Spec: every8h, Command: "poll"},
	}
	if _, err := s.Sync(ctx, defs...); err != nil {
		panic(err)
	}
	p, err := s.Processor()
	if err != nil {
		panic(err)
	}
	minutes := func(n int) {
		for range n {
			clock.Advance(time.Minute)
			if _, err := p.Process(ctx, clock.Now()); err != nil {
				panic(err)
			}
		}
	}
	minutes(24 * 60)

	// Redeploy with the poll every hour: it takes effect at once.
	defs[1].Spec, _ = schedule.Every(time.Hour, clock.Now())
	res, _ := s.Sync(ctx, defs...)
	fmt.Println("changed:", res.Changed, "unchanged:", res.Unchanged)
	minutes(3 * 60)
	// Output:
	// Fri 03-27 08:00 +01 poll    poll@2026-03-27T07:00:00Z
	// Fri 03-27 12:00 +01 report  weekly-report@2026-03-27T11:00:00Z
	// Fri 03-27 16:00 +01 poll    poll@2026-03-27T15:00:00Z
	// Sat 03-28 00:00 +01 poll    poll@2026-03-27T23:00:00Z
	// changed: [poll] unchanged: [weekly-report]
	// Sat 03-28 01:00 +01 poll    poll@2026-03-28T00:00:00Z
	// Sat 03-28 02:00 +01 poll    poll@2026-03-28T01:00:00Z
	// Sat 03-28 03:00 +01 poll    poll@2026-03-28T02:00:00Z
}
