package schedule_test

import (
	"bufio"
	"context"
	"fmt"
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
			var running, session string
			for lines.Scan() {
				if rest, ok := strings.CutPrefix(lines.Text(), "running "); ok {
					running, session, _ = strings.Cut(rest, " ")
					break
				}
			}
			require.Equal(t, schedule.SlotID("hourly", killSlot), running, "the child started the slot")
			require.NoError(t, child.Process.Kill()) // SIGKILL: nothing is cleaned up
			_ = child.Wait()
			if session != "" {
				// PostgreSQL ends the dead client's session, and releases
				// the slot's row locks, when it reads the closed socket:
				// soon, but not before the kill returns. Until then the
				// survivor's claim would skip the locked item.
				require.Eventually(t, func() bool {
					var alive int
					require.NoError(t, db.GetContext(ctx, &alive, "SELECT COUNT(*) FROM pg_stat_activity WHERE pid = $1", session))
					return alive == 0
				}, 10*time.Second, 5*time.Millisecond, "the killed process's session %s ended", session)
			}

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
	handler := func(ctx context.Context, tx *sqlx.Tx, run schedule.Run) error {
		// On PostgreSQL, the session holding the slot's locks, for the
		// parent to wait until the server has ended it.
		session := ""
		if db.IsPostgres() {
			var pid int
			require.NoError(t, tx.GetContext(ctx, &pid, "SELECT pg_backend_pid()"))
			session = fmt.Sprintf(" %d", pid)
		}
		os.Stdout.WriteString("running " + run.SlotID + session + "\n")
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
