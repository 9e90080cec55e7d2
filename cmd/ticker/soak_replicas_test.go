package main_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/tick"
)

// soakLease returns the lease as it stands, once it is held and
// unexpired (within 10 s; the zero Lease otherwise).
func soakLease(ctx context.Context, t *testing.T, db *sqldb.DB) tick.Lease {
	for range 100 {
		var l struct {
			Holder  string `db:"holder"`
			Term    int64  `db:"term"`
			Expires int64  `db:"expires_at"`
		}
		err := db.GetContext(ctx, &l, `SELECT holder, term, expires_at FROM tick_lease WHERE name = 'ticker'`)
		if err == nil && l.Holder != "" && sqldb.DecodeTime(l.Expires).After(time.Now()) {
			return tick.Lease{Holder: l.Holder, Term: l.Term, Expires: sqldb.DecodeTime(l.Expires)}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("no live lease holder found")
	return tick.Lease{}
}

// soakReplica is one process of "ticker run"; a replica restarted after a
// kill is a new soakReplica with a holder id of its own.
type soakReplica struct {
	slot    int
	holder  string
	cmd     *exec.Cmd
	stderr  string
	done    chan struct{}
	err     error // from Wait
	killed  bool  // by the soak (SIGKILL)
	stopped bool  // SIGSTOPped by the soak at least once
}

type soakReplicas struct {
	t             *testing.T
	bin, dsn, dir string
	url           string
	mu            sync.Mutex
	all           []*soakReplica
	incarnations  [soakReplicaCount]int
}

func (rs *soakReplicas) start(slot int) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.incarnations[slot]++
	holder := fmt.Sprintf("r%d.%d", slot, rs.incarnations[slot])
	r := &soakReplica{slot: slot, holder: holder, done: make(chan struct{}), stderr: filepath.Join(rs.dir, holder+".stderr")}
	stderr, err := os.Create(r.stderr)
	require.NoError(rs.t, err)
	stdout, err := os.Create(filepath.Join(rs.dir, holder+".stdout"))
	require.NoError(rs.t, err)
	r.cmd = exec.Command(rs.bin, "run", "--db", rs.dsn, "--units", "minute", "--webhook", rs.url,
		"--lease-ttl", soakLeaseTTL.String(), "--http", "127.0.0.1:0", "--holder", holder)
	r.cmd.Env = append(os.Environ(), "PASSAGE_WEBHOOK_SECRET="+soakSecret)
	r.cmd.Stdout, r.cmd.Stderr = stdout, stderr
	require.NoError(rs.t, r.cmd.Start())
	go func() {
		r.err = r.cmd.Wait()
		_ = stdout.Close()
		_ = stderr.Close()
		close(r.done)
	}()
	rs.all = append(rs.all, r)
}

// restartDead starts a new replica in each slot whose last one the soak
// killed.
func (rs *soakReplicas) restartDead() {
	rs.mu.Lock()
	var slots []int
	for slot := range soakReplicaCount {
		var last *soakReplica
		for _, r := range rs.all {
			if r.slot == slot {
				last = r
			}
		}
		if last != nil && last.killed {
			slots = append(slots, slot)
		}
	}
	rs.mu.Unlock()
	for _, slot := range slots {
		rs.start(slot)
	}
}

// live returns the replicas still running.
func (rs *soakReplicas) live() []*soakReplica {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var out []*soakReplica
	for _, r := range rs.all {
		select {
		case <-r.done:
		default:
			out = append(out, r)
		}
	}
	return out
}

// pick returns the live replica holding the lease, or with standby one
// that does not.
func (rs *soakReplicas) pick(holder string, standby bool) *soakReplica {
	for _, r := range rs.live() {
		if (r.holder == holder) != standby {
			return r
		}
	}
	return nil
}

// stopAll stops the live replicas with SIGTERM, as an operator would, and
// waits for them to drain and exit 0.
func (rs *soakReplicas) stopAll() {
	live := rs.live()
	for _, r := range live {
		require.NoError(rs.t, r.cmd.Process.Signal(syscall.SIGTERM))
	}
	for _, r := range live {
		select {
		case <-r.done:
			require.NoError(rs.t, r.err, "%s stopped with SIGTERM", r.holder)
		case <-time.After(45 * time.Second):
			rs.t.Errorf("%s did not stop within 45 s of SIGTERM", r.holder)
		}
	}
}

func (rs *soakReplicas) killAll() {
	for _, r := range rs.live() {
		_ = r.cmd.Process.Kill()
		<-r.done
	}
}

// checkLogs reads the replicas' stderr: no panic or race, and no lease
// lost by a live holder. A holder counts as live unless the soak froze it
// (SIGSTOP: it comes back to a lease that lapsed, which it must notice)
// or the database was restarting (a holder that cannot renew gives the
// lease up: that is the promise, not a breach), within two ttls of the
// restart's end. A killed replica logs nothing after its kill.
func (rs *soakReplicas) checkLogs(pgRestarts [][2]time.Time) {
	for _, r := range rs.all {
		f, err := os.Open(r.stderr)
		require.NoError(rs.t, err)
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if strings.Contains(line, "panic") || strings.Contains(line, "DATA RACE") {
				rs.t.Errorf("%s: %s", r.holder, line)
			}
			if !strings.Contains(line, "lease lost") || r.stopped {
				continue
			}
			at := logTime(line)
			excused := false
			for _, w := range pgRestarts {
				excused = excused || (!at.Before(w[0]) && at.Before(w[1].Add(2*soakLeaseTTL)))
			}
			if !excused {
				rs.t.Errorf("lease lost by a live holder: %s: %s", r.holder, line)
			}
		}
		require.NoError(rs.t, sc.Err())
		_ = f.Close()
	}
}

// logTime is the time= of a slog text line, zero if it has none.
func logTime(line string) time.Time {
	rest, ok := strings.CutPrefix(line, "time=")
	if !ok {
		return time.Time{}
	}
	v, _, _ := strings.Cut(rest, " ")
	at, _ := time.Parse(time.RFC3339Nano, strings.Trim(v, `"`))
	return at
}

// soakLock is the soak's hold on every schedule's row (the lock fault).
type soakLock struct {
	tx    *sqlx.Tx
	lease tick.Lease // as it stood when the lock was taken
	at    time.Time
	pid   int // the locking session's backend
}

// runFaults applies the plan's faults, each at its instant, and returns
// when the last one ended.
func (s *soak) runFaults() time.Time {
	t := s.t
	lastFault := s.b1
	var lock soakLock
	defer func() {
		if lock.tx != nil {
			_ = lock.tx.Rollback()
		}
	}()
	for _, f := range s.plan.faults {
		sleepUntil(s.b1.Add(f.at))
		switch f.kind {
		case "kill-holder", "kill-standby", "stop-holder":
			s.signal(f, lock)
		case "restart":
			s.reps.restartDead()
		case "lock":
			lock = s.lock()
		case "unlock":
			require.NoError(t, lock.tx.Rollback())
			lock.tx = nil
			t.Logf("schedules unlocked at %s", time.Now().Format("15:04:05.000"))
		case "lease-kept":
			now := soakLease(s.ctx, t, s.db)
			if now.Holder != lock.lease.Holder || now.Term != lock.lease.Term {
				t.Errorf("a holder whose pass was blocked for %v lost its lease: %q at term %d, now %q at term %d until %s",
					time.Since(lock.at).Round(time.Millisecond), lock.lease.Holder, lock.lease.Term, now.Holder, now.Term, now.Expires.Format("15:04:05.000"))
			}
		case "pg-restart":
			s.restartPostgres()
		}
		lastFault = time.Now()
	}
	return lastFault
}

// signal kills (SIGKILL) the holder or a standby, or freezes the holder
// (SIGSTOP) for f.down. A kill while lock holds the schedules must land
// inside the holder's firing transaction, blocked on the lock.
func (s *soak) signal(f soakFault, lock soakLock) {
	t := s.t
	holder := soakLease(s.ctx, t, s.db).Holder
	r := s.reps.pick(holder, f.kind == "kill-standby")
	if r == nil {
		t.Errorf("%s at B1%+v: no replica to pick (holder %q)", f.kind, f.at, holder)
		return
	}
	if f.kind == "stop-holder" {
		t.Logf("SIGSTOP %s (holder %q) at %s for %v", r.holder, holder, time.Now().Format(time.TimeOnly), f.down)
		r.stopped = true
		require.NoError(t, r.cmd.Process.Signal(syscall.SIGSTOP))
		time.Sleep(f.down)
		require.NoError(t, r.cmd.Process.Signal(syscall.SIGCONT))
		return
	}
	t.Logf("kill -9 %s (holder %q) at %s", r.holder, holder, time.Now().Format("15:04:05.000"))
	if lock.tx != nil {
		// The kill is meant to land inside the holder's firing
		// transaction, blocked on the soak's lock: without that, a run
		// recorded outside it would go unnoticed.
		var waiting int
		require.NoError(t, s.db.GetContext(s.ctx, &waiting, `SELECT COUNT(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, lock.pid))
		if waiting == 0 {
			t.Errorf("the kill at B1%+v found no transaction blocked on the soak's lock: the holder was not inside a firing transaction", f.at)
		}
	}
	r.killed = true
	require.NoError(t, r.cmd.Process.Kill())
	<-r.done
}

// lock holds every schedule's row locked in a transaction of the soak's.
func (s *soak) lock() soakLock {
	t := s.t
	tx, err := s.db.BeginTxx(s.ctx, nil)
	require.NoError(t, err)
	l := soakLock{tx: tx}
	_, err = tx.ExecContext(s.ctx, `SELECT name FROM schedule_schedules FOR UPDATE`)
	require.NoError(t, err)
	require.NoError(t, tx.GetContext(s.ctx, &l.pid, `SELECT pg_backend_pid()`))
	l.lease, l.at = soakLease(s.ctx, t, s.db), time.Now()
	t.Logf("schedules locked at %s; lease held by %q at term %d", time.Now().Format("15:04:05.000"), l.lease.Holder, l.lease.Term)
	return l
}

// restartPostgres restarts the PostgreSQL server and notes when.
func (s *soak) restartPostgres() {
	t := s.t
	start := time.Now()
	ver, err := os.ReadDir("/etc/postgresql")
	require.NoError(t, err)
	require.Len(t, ver, 1, "one PostgreSQL cluster version in /etc/postgresql")
	out, err := exec.Command("pg_ctlcluster", "--skip-systemctl-redirect", ver[0].Name(), "main", "restart").CombinedOutput()
	require.NoError(t, err, "restart PostgreSQL: %s", out)
	s.pgRestarts = append(s.pgRestarts, [2]time.Time{start, time.Now()})
	t.Logf("PostgreSQL restarted from %s to %s", start.Format(time.TimeOnly), time.Now().Format(time.TimeOnly))
}
