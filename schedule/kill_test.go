package schedule_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/todolist"
)

// killSlot is the slot the killed process is in the middle of firing.
var killSlot = time.Date(2026, 5, 1, 1, 0, 0, 0, time.UTC)

// TestARunKilledMidwayIsFiredOnceUnderTheSameSlotID kills a process with
// SIGKILL while its handler runs a slot, then lets another process fire
// the schedule: the slot runs again under the same slot id and is
// recorded once.
func TestARunKilledMidwayIsFiredOnceUnderTheSameSlotID(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db, dsn := b.Open(t)
			ctx := context.Background()
			clock := clockwork.NewFakeClockAt(killSlot.Add(-time.Hour))
			survivor := newNode(t, db.DB, clock, &recorder{})
			_, err := survivor.s.Sync(ctx, schedule.Definition{Name: "hourly", Spec: mustSpec(t)(schedule.Cron("0 * * * *", nil)), Command: "report"})
			require.NoError(t, err)

			child := exec.Command(os.Args[0], "-test.run=^TestKilledScheduleProcess$", "-test.v")
			child.Env = append(os.Environ(), "SCHEDULE_KILL_DSN="+dsn)
			out, err := child.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, child.Start())
			lines := bufio.NewScanner(out)
			var running string
			for lines.Scan() {
				if id, ok := strings.CutPrefix(lines.Text(), "running "); ok {
					running = id
					break
				}
			}
			require.Equal(t, schedule.SlotID("hourly", killSlot), running, "the child started the slot")
			require.NoError(t, child.Process.Kill()) // SIGKILL: nothing is cleaned up
			_ = child.Wait()

			var recorded int
			require.NoError(t, db.GetContext(ctx, &recorded, "SELECT COUNT(*) FROM schedule_runs"))
			require.Zero(t, recorded, "the killed run's record rolled back with it")

			// After the dead process's lease, the survivor fires the slot.
			clock.Advance(time.Hour + 2*time.Minute)
			survivor.process(t, clock)
			require.Len(t, survivor.rec.runs, 1)
			run := survivor.rec.runs[0]
			require.Equal(t, running, run.SlotID, "the same slot id")
			require.Equal(t, 1, run.Attempt, "a kill records no failed attempt")
			require.NoError(t, db.GetContext(ctx, &recorded, "SELECT COUNT(*) FROM schedule_runs"))
			require.Equal(t, 1, recorded)
		})
	}
}

// TestKilledScheduleProcess is the process the test above kills: it fires
// the due slot and blocks in the handler. It does nothing when run on its
// own.
func TestKilledScheduleProcess(t *testing.T) {
	dsn := os.Getenv("SCHEDULE_KILL_DSN")
	if dsn == "" {
		t.Skip("the child of TestARunKilledMidwayIsFiredOnceUnderTheSameSlotID")
	}
	db, err := sqldb.Open(context.Background(), dsn)
	require.NoError(t, err)
	clock := clockwork.NewFakeClockAt(killSlot.Add(time.Second))
	handler := func(_ context.Context, _ *sqlx.Tx, run schedule.Run) error {
		os.Stdout.WriteString("running " + run.SlotID + "\n")
		select {} // until SIGKILL
	}
	s, err := schedule.Open(context.Background(), db.DB, handler, schedule.WithClock(clock))
	require.NoError(t, err)
	p, err := s.Processor(todolist.WithLease(30 * time.Second))
	require.NoError(t, err)
	_, err = p.Process(context.Background(), clock.Now())
	require.NoError(t, err)
	t.Fatal("the handler returned")
}
