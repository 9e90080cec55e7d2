package main_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/internal/sqldbtest"
	"github.com/passage-of-time/passage/internal/timefmt"
	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/tick"
)

// The soak of issue 26: "ticker run" as operators deploy it — three
// replicas on one PostgreSQL database, stored schedules of six kinds
// (stored as if five minutes ago, as after an outage: the first pass
// meets missed slots, and each catch-up policy fires some and reports the
// others skipped), a webhook receiver that is slow (44 ms), fails and stalls, the
// leaseholder killed with SIGKILL — on the real clock, built and run as
// processes; then the delivery guarantee is checked from the database
// and from what the receiver accepted (soakCheck). It runs only when
// PASSAGE_SOAK is set (and PASSAGE_TEST_POSTGRES):
//
//	PASSAGE_SOAK=short  40 schedules; a minute's firing transaction held
//	                    on a row lock for 10 s (longer than the 6 s lease:
//	                    the holder must keep it) and the holder killed
//	                    inside it; 503 for 20% of requests for 40 s, 3
//	                    requests stalled 8 s; one quiet minute checked for
//	                    punctuality; about 2 minutes
//	PASSAGE_SOAK=long   500 schedules; that, and seven kill -9s in all
//	                    (five of the holder), a pass held for 12 s, a
//	                    SIGSTOP of the holder for a minute, 503s for two
//	                    minutes, 5 stalls of 40 s; three quiet minutes;
//	                    about 19 minutes (go test -timeout 30m)
//
// Run it alone: while the held transaction is open, PostgreSQL's xmin
// horizon (cluster-wide) holds back every outbox relay on the server, so
// delivery tests running beside it wait 10 s for their records.
//
// PASSAGE_SOAK_PG_RESTART=1 adds, in long mode, a restart of the
// PostgreSQL server (pg_ctlcluster; it breaks any other test using the
// server at that moment, so it is never on by default).
// PASSAGE_SOAK_KEEP=1 keeps the replicas' logs (their directory is
// logged); a failing soak always keeps them.
const soakEnv = "PASSAGE_SOAK"

// soakPlan is one mode of the soak. Offsets are from B1, the first
// minute boundary at least 8 s after the replicas start.
type soakPlan struct {
	schedules int
	// The receiver fails failRate of the requests in [failFrom, failTo)
	// with 503, and stalls the first stalls requests in [stallFrom,
	// stallTo) for stallFor each (then accepts them if the sender still
	// waits: the webhook gives up after 10 s).
	failFrom, failTo   time.Duration
	failRate           float64
	stallFrom, stallTo time.Duration
	stalls             int
	stallFor           time.Duration
	faults             []soakFault
	// quiet are the boundaries (offsets from B1, whole minutes) after the
	// last fault at which every slot must fire in its own boundary's pass.
	quiet []time.Duration
}

type soakFault struct {
	at time.Duration
	// kind is one of:
	//   - kill-holder, kill-standby: SIGKILL the lease's holder, or a
	//     replica that does not hold it; restart brings it back (a new
	//     process, a holder id of its own);
	//   - stop-holder: SIGSTOP the holder, SIGCONT it after down;
	//   - lock, unlock: hold every schedule's row locked (SELECT … FOR
	//     UPDATE in a transaction of the soak's), so that a pass that
	//     fires runs blocks inside its firing transaction — after it
	//     recorded the runs and wrote their outbox records, before it
	//     commits — and a kill-holder then lands in the middle of it; or,
	//     without a kill, the pass lasts longer than the lease's ttl;
	//   - lease-kept: the holder found at the last lock still holds the
	//     lease at the same term, unexpired (a pass blocked for longer
	//     than the ttl must not cost it);
	//   - pg-restart: restart the PostgreSQL server.
	kind string
	down time.Duration // stop-holder
}

func soakPlanFor(mode string, pgRestart bool) soakPlan {
	lockedKill := func(b time.Duration) []soakFault {
		return []soakFault{
			{at: b - 2*time.Second, kind: "lock"},
			{at: b + 7500*time.Millisecond, kind: "lease-kept"},
			{at: b + 8*time.Second, kind: "kill-holder"},
			{at: b + 8500*time.Millisecond, kind: "unlock"},
			{at: b + 11*time.Second, kind: "restart"},
		}
	}
	killed := func(at time.Duration, kind string) []soakFault {
		return []soakFault{{at: at, kind: kind}, {at: at + 3*time.Second, kind: "restart"}}
	}
	if mode == "long" {
		p := soakPlan{
			schedules: 500,
			failFrom:  1 * time.Minute, failTo: 3 * time.Minute, failRate: 0.2,
			stallFrom: 70 * time.Second, stallTo: 3 * time.Minute, stalls: 5, stallFor: 40 * time.Second,
			quiet: []time.Duration{14 * time.Minute, 15 * time.Minute, 16 * time.Minute},
		}
		p.faults = slices.Concat(
			lockedKill(0),
			killed(4*time.Minute+20*time.Second, "kill-standby"),
			[]soakFault{ // a pass blocked for 12 s, twice the ttl
				{at: 5*time.Minute - 2*time.Second, kind: "lock"},
				{at: 5*time.Minute + 10*time.Second, kind: "lease-kept"},
				{at: 5*time.Minute + 10500*time.Millisecond, kind: "unlock"},
			},
			killed(6*time.Minute+400*time.Millisecond, "kill-holder"),
			killed(6*time.Minute+30*time.Second, "kill-holder"),
			killed(7*time.Minute+20*time.Second, "kill-standby"),
			[]soakFault{{at: 8*time.Minute + 500*time.Millisecond, kind: "stop-holder", down: time.Minute}},
			killed(10*time.Minute+400*time.Millisecond, "kill-holder"),
			killed(12*time.Minute+400*time.Millisecond, "kill-holder"),
		)
		if pgRestart {
			p.faults = append(p.faults, soakFault{at: 11*time.Minute + 10*time.Second, kind: "pg-restart"})
		}
		slices.SortStableFunc(p.faults, func(a, b soakFault) int { return int(a.at - b.at) })
		return p
	}
	return soakPlan{
		schedules: 40,
		failFrom:  -10 * time.Second, failTo: 30 * time.Second, failRate: 0.2,
		stallFrom: 0, stallTo: 40 * time.Second, stalls: 3, stallFor: 8 * time.Second,
		faults: lockedKill(0),
		quiet:  []time.Duration{time.Minute},
	}
}

const (
	soakLeaseTTL     = 6 * time.Second
	soakSecret       = "soak-secret"
	soakReplicaCount = 3
)

func TestSoak(t *testing.T) {
	mode := os.Getenv(soakEnv)
	if mode == "" {
		t.Skip(soakEnv + " is not set (short: about 2.5 minutes, long: about 20)")
	}
	if mode != "short" && mode != "long" {
		t.Fatalf("%s=%q: want short or long", soakEnv, mode)
	}
	if testing.Short() {
		t.Skip("runs for minutes on the real clock")
	}
	if os.Getenv(sqldbtest.PostgresEnv) == "" {
		t.Skip(sqldbtest.PostgresEnv + " is not set")
	}
	t.Parallel()
	plan := soakPlanFor(mode, os.Getenv("PASSAGE_SOAK_PG_RESTART") == "1")
	ctx := context.Background()

	dir, err := os.MkdirTemp("", "passage-soak-")
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("PASSAGE_SOAK_KEEP") != "" {
			t.Logf("soak logs kept in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	bin := filepath.Join(dir, "ticker")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	db, dsn := sqldbtest.Postgres(t)
	defs := soakSchedules(t, plan.schedules)
	// Stored as if five minutes ago: the first pass meets the slots
	// missed since, and the catch-up policies fire some and report the
	// others skipped (SlotsSkipped).
	s, err := schedule.Open(ctx, db.DB, func(context.Context, *sqlx.Tx, schedule.Run) error {
		return fmt.Errorf("the soak's own scheduler fires nothing")
	}, schedule.WithClock(clockwork.NewFakeClockAt(time.Now().Add(-5*time.Minute))))
	require.NoError(t, err)
	_, err = s.Sync(ctx, defs...)
	require.NoError(t, err)
	jitter := map[string]time.Duration{}
	specs := map[string]schedule.Spec{}
	for _, d := range defs {
		jitter[d.Name], specs[d.Name] = d.Jitter, d.Spec
	}

	recv := newSoakReceiver(t, plan)
	defer recv.srv.Close()

	// B1: the first minute boundary at least 8 s after the replicas
	// start, so that they have elected a holder before it.
	s0 := time.Now()
	b1 := s0.Add(8 * time.Second).Truncate(time.Minute).Add(time.Minute)
	recv.setWindows(b1)
	t.Logf("soak %s: %d schedules, %d replicas, B1 %s (in %v)", mode, len(defs), soakReplicaCount, b1.Format(time.TimeOnly), time.Until(b1).Round(time.Second))

	reps := &soakReplicas{t: t, bin: bin, dsn: dsn, dir: dir, url: recv.srv.URL + "/hook"}
	for i := range soakReplicaCount {
		reps.start(i)
	}
	defer reps.killAll()

	lastFault := b1
	var (
		pgRestarts [][2]time.Time
		lock       *sqlx.Tx
		locked     tick.Lease
		lockedAt   time.Time
		lockPID    int
	)
	defer func() {
		if lock != nil {
			_ = lock.Rollback()
		}
	}()
	for _, f := range plan.faults {
		sleepUntil(b1.Add(f.at))
		switch f.kind {
		case "kill-holder", "kill-standby", "stop-holder":
			holder := soakLease(ctx, t, db).Holder
			r := reps.pick(holder, f.kind == "kill-standby")
			if r == nil {
				t.Errorf("%s at B1%+v: no replica to pick (holder %q)", f.kind, f.at, holder)
				continue
			}
			if f.kind == "stop-holder" {
				t.Logf("SIGSTOP %s (holder %q) at %s for %v", r.holder, holder, time.Now().Format(time.TimeOnly), f.down)
				r.stopped = true
				require.NoError(t, r.cmd.Process.Signal(syscall.SIGSTOP))
				time.Sleep(f.down)
				require.NoError(t, r.cmd.Process.Signal(syscall.SIGCONT))
				break
			}
			t.Logf("kill -9 %s (holder %q) at %s", r.holder, holder, time.Now().Format("15:04:05.000"))
			if lock != nil {
				// The kill is meant to land inside the holder's firing
				// transaction, blocked on the soak's lock: without that,
				// a run recorded outside it would go unnoticed.
				var waiting int
				require.NoError(t, db.GetContext(ctx, &waiting, `SELECT COUNT(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, lockPID))
				if waiting == 0 {
					t.Errorf("the kill at B1%+v found no transaction blocked on the soak's lock: the holder was not inside a firing transaction", f.at)
				}
			}
			r.killed = true
			require.NoError(t, r.cmd.Process.Kill())
			<-r.done
		case "restart":
			reps.restartDead()
		case "lock":
			var err error
			lock, err = db.BeginTxx(ctx, nil)
			require.NoError(t, err)
			_, err = lock.ExecContext(ctx, `SELECT name FROM schedule_schedules FOR UPDATE`)
			require.NoError(t, err)
			require.NoError(t, lock.GetContext(ctx, &lockPID, `SELECT pg_backend_pid()`))
			locked, lockedAt = soakLease(ctx, t, db), time.Now()
			t.Logf("schedules locked at %s; lease held by %q at term %d", time.Now().Format("15:04:05.000"), locked.Holder, locked.Term)
		case "unlock":
			require.NoError(t, lock.Rollback())
			lock = nil
			t.Logf("schedules unlocked at %s", time.Now().Format("15:04:05.000"))
		case "lease-kept":
			now := soakLease(ctx, t, db)
			if now.Holder != locked.Holder || now.Term != locked.Term {
				t.Errorf("a holder whose pass was blocked for %v lost its lease: %q at term %d, now %q at term %d until %s",
					time.Since(lockedAt).Round(time.Millisecond), locked.Holder, locked.Term, now.Holder, now.Term, now.Expires.Format("15:04:05.000"))
			}
		case "pg-restart":
			start := time.Now()
			ver, err := os.ReadDir("/etc/postgresql")
			require.NoError(t, err)
			require.Len(t, ver, 1, "one PostgreSQL cluster version in /etc/postgresql")
			out, err := exec.Command("pg_ctlcluster", "--skip-systemctl-redirect", ver[0].Name(), "main", "restart").CombinedOutput()
			require.NoError(t, err, "restart PostgreSQL: %s", out)
			pgRestarts = append(pgRestarts, [2]time.Time{start, time.Now()})
			t.Logf("PostgreSQL restarted from %s to %s", start.Format(time.TimeOnly), time.Now().Format(time.TimeOnly))
		}
		lastFault = time.Now()
	}
	quietFrom := b1.Add(plan.quiet[0])
	require.True(t, lastFault.Add(soakLeaseTTL).Before(quietFrom), "the plan's last fault (%s) leaves no quiet minute", lastFault)
	lastQuiet := b1.Add(plan.quiet[len(plan.quiet)-1])
	// Every slot whose boundary is the last quiet one fires in its pass,
	// and is delivered, within seconds.
	sleepUntil(lastQuiet.Add(15 * time.Second))
	stoppedAt := time.Now()
	reps.stopAll()
	t.Logf("replicas stopped in %v", time.Since(stoppedAt).Round(time.Millisecond))

	// What the database committed.
	var runs []soakRun
	require.NoError(t, db.SelectContext(ctx, &runs, `SELECT slot_id, run_id, schedule, slot, fired_at, attempt, manual FROM schedule_runs`))
	var records []soakRecord
	require.NoError(t, db.SelectContext(ctx, &records, `SELECT key, type, body FROM outbox_records`))
	var parked int
	require.NoError(t, db.GetContext(ctx, &parked, `SELECT COUNT(*) FROM outbox_attempts WHERE parked = 1`))
	acc := recv.log()

	c := soakCheck{t: t, runs: runs, records: records, acc: acc, jitter: jitter, specs: specs}
	c.everyRecordDelivered()
	c.nothingUncommittedDelivered()
	c.noSlotDeliveredAndSkipped()
	c.noRunEarly()
	c.backOnTime(b1, plan.quiet)
	reps.checkLogs(pgRestarts)
	require.Zero(t, parked, "records parked")
	require.Zero(t, recv.badSignatures(), "requests with a bad signature or headers that do not match the body")
	c.report(recv, b1)
	if t.Failed() || os.Getenv("PASSAGE_SOAK_KEEP") != "" {
		// The schema is dropped with the test: keep what it held, and
		// what the receiver accepted, beside the replicas' logs.
		var b strings.Builder
		b.WriteString("slot_id\trun_id\tslot\tfired_at\tattempt\n")
		for _, r := range runs {
			fmt.Fprintf(&b, "%s\t%s\t%s\t%s\t%d\n", r.SlotID, r.RunID, timefmt.Format(sqldb.DecodeTime(r.Slot)), timefmt.Format(sqldb.DecodeTime(r.FiredAt)), r.Attempt)
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, "schedule_runs.tsv"), []byte(b.String()), 0o644))
		b.Reset()
		b.WriteString("accepted_at\ttype\tkey\trun_id\n")
		for _, a := range acc {
			fmt.Fprintf(&b, "%s\t%s\t%s\t%s\n", timefmt.Format(a.At), a.Type, a.Key, a.RunID)
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, "accepted.tsv"), []byte(b.String()), 0o644))
	}
}

// soakSchedules declares n schedules of six kinds, in turn: every minute
// (cron, latest), every 2 minutes (cron, all, jittered by 30 s), @every
// 90s (skip), an RRULE every minute (all), every minute jittered by 20 s
// (all), and every minute at second 0 (6-field cron, latest).
func soakSchedules(t *testing.T, n int) []schedule.Definition {
	dtstart := time.Now().UTC().Truncate(time.Hour).Add(-time.Hour).Format("20060102T150405Z")
	kinds := []struct {
		spec    string
		catchUp tick.CatchUp
		jitter  time.Duration
	}{
		{"* * * * *", tick.LatestOnly{}, 0},
		{"*/2 * * * *", tick.All{Window: 24 * time.Hour, Max: 100}, 30 * time.Second},
		{"@every 90s", tick.Skip{}, 0},
		{"DTSTART:" + dtstart + "\nRRULE:FREQ=MINUTELY", tick.All{Window: 24 * time.Hour, Max: 100}, 0},
		{"* * * * *", tick.All{Window: 24 * time.Hour, Max: 100}, 20 * time.Second},
		{"0 * * * * *", tick.LatestOnly{}, 0},
	}
	defs := make([]schedule.Definition, n)
	for i := range defs {
		k := kinds[i%len(kinds)]
		spec, err := schedule.Parse(k.spec, time.UTC)
		require.NoError(t, err, k.spec)
		defs[i] = schedule.Definition{
			Name: fmt.Sprintf("s%03d-k%d", i, i%len(kinds)), Spec: spec, Command: "soak",
			Payload: []byte(fmt.Sprintf(`{"i":%d}`, i)), CatchUp: k.catchUp, Jitter: k.jitter,
		}
	}
	return defs
}

func sleepUntil(at time.Time) { time.Sleep(time.Until(at)) }

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

// soakReceiver is the webhook receiver: about 44 ms an answer, 503 for a
// share of the requests in a window, a few requests stalled; every
// request's signature verified, every accepted request logged.
type soakReceiver struct {
	t    *testing.T
	plan soakPlan
	srv  *httptest.Server

	mu                       sync.Mutex
	failFrom, failTo         time.Time
	stallFrom, stallTo       time.Time
	stalled, refused, stalls int
	requests, bad            int
	accepted                 []soakAcceptance
}

type soakAcceptance struct {
	Key, Type, RunID, SlotID, Schedule string
	Slot, FiredAt, From, To            time.Time
	At                                 time.Time
	Body                               [32]byte
}

func newSoakReceiver(t *testing.T, plan soakPlan) *soakReceiver {
	r := &soakReceiver{t: t, plan: plan}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	return r
}

func (r *soakReceiver) setWindows(b1 time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failFrom, r.failTo = b1.Add(r.plan.failFrom), b1.Add(r.plan.failTo)
	r.stallFrom, r.stallTo = b1.Add(r.plan.stallFrom), b1.Add(r.plan.stallTo)
}

func (r *soakReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var rec struct {
		Type     string     `json:"type"`
		ID       string     `json:"id"`
		RunID    string     `json:"run_id"`
		SlotID   string     `json:"slot_id"`
		Schedule string     `json:"schedule"`
		Slot     *sink.Time `json:"slot"`
		FiredAt  *sink.Time `json:"fired_at"`
		From     *sink.Time `json:"from"`
		To       *sink.Time `json:"to"`
	}
	// A CloudEvent (docs/events.md): type and id in the envelope, the
	// record's fields in its data.
	var ev struct {
		Type string          `json:"type"`
		ID   string          `json:"id"`
		Data json.RawMessage `json:"data"`
	}
	jsonErr := json.Unmarshal(body, &ev)
	if jsonErr == nil {
		jsonErr = json.Unmarshal(ev.Data, &rec)
		rec.Type, rec.ID = ev.Type, ev.ID
	}
	now := time.Now()
	r.mu.Lock()
	r.requests++
	if !sink.Verify([]byte(soakSecret), body, req.Header.Get(sink.HeaderSignature)) || jsonErr != nil ||
		req.Header.Get(sink.HeaderIdempotency) != rec.ID || req.Header.Get(sink.HeaderEvent) != rec.Type {
		r.bad++
		r.mu.Unlock()
		http.Error(w, "bad signature or headers", http.StatusUnauthorized)
		return
	}
	fail := !now.Before(r.failFrom) && now.Before(r.failTo) && rand.Float64() < r.plan.failRate
	stall := !fail && !now.Before(r.stallFrom) && now.Before(r.stallTo) && r.stalls < r.plan.stalls
	if fail {
		r.refused++
	}
	if stall {
		r.stalls++
	}
	r.mu.Unlock()

	time.Sleep(44 * time.Millisecond)
	if fail {
		http.Error(w, "failing for a while", http.StatusServiceUnavailable)
		return
	}
	if stall {
		select {
		case <-time.After(r.plan.stallFor):
		case <-req.Context().Done():
			// The sender gave up (its 10 s timeout): not accepted.
			return
		}
	}
	a := soakAcceptance{Key: rec.ID, Type: rec.Type, RunID: rec.RunID, SlotID: rec.SlotID, Schedule: rec.Schedule,
		At: time.Now(), Body: sha256.Sum256(body)}
	for _, p := range []struct {
		dst *time.Time
		src *sink.Time
	}{{&a.Slot, rec.Slot}, {&a.FiredAt, rec.FiredAt}, {&a.From, rec.From}, {&a.To, rec.To}} {
		if p.src != nil {
			*p.dst = p.src.Time
		}
	}
	r.mu.Lock()
	r.accepted = append(r.accepted, a)
	if stall {
		r.stalled++
	}
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (r *soakReceiver) log() []soakAcceptance {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.accepted)
}

func (r *soakReceiver) badSignatures() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bad
}

type soakRun struct {
	SlotID   string `db:"slot_id"`
	RunID    string `db:"run_id"`
	Schedule string `db:"schedule"`
	Slot     int64  `db:"slot"`
	FiredAt  int64  `db:"fired_at"`
	Attempt  int    `db:"attempt"`
	Manual   int    `db:"manual"`
}

type soakRecord struct {
	Key  string `db:"key"`
	Type string `db:"type"`
	Body []byte `db:"body"`
}

// soakCheck holds what the database committed and what the receiver
// accepted, and checks one against the other.
type soakCheck struct {
	t       *testing.T
	runs    []soakRun
	records []soakRecord
	acc     []soakAcceptance
	jitter  map[string]time.Duration
	specs   map[string]schedule.Spec
}

// fails reports a breach of an invariant with up to 10 examples.
func (c soakCheck) fails(what string, examples []string) {
	c.t.Helper()
	if len(examples) == 0 {
		return
	}
	shown := examples[:min(len(examples), 10)]
	c.t.Errorf("%s: %d, e.g.\n  %s", what, len(examples), strings.Join(shown, "\n  "))
}

// everyRecordDelivered: every committed record (a run, a skip report, a
// minute) was accepted at least once under its key, with the body the
// database holds; and every committed run under its slot id with the run
// id committed.
func (c soakCheck) everyRecordDelivered() {
	c.t.Helper()
	accepted := map[string][]soakAcceptance{}
	for _, a := range c.acc {
		accepted[a.Key] = append(accepted[a.Key], a)
	}
	var missing, otherBody []string
	for _, rec := range c.records {
		as := accepted[rec.Key]
		if len(as) == 0 {
			missing = append(missing, rec.Type+" "+rec.Key)
			continue
		}
		for _, a := range as {
			if a.Body != sha256.Sum256(rec.Body) {
				otherBody = append(otherBody, fmt.Sprintf("%s accepted at %s with run_id %s", rec.Key, a.At.Format(time.TimeOnly), a.RunID))
			}
		}
	}
	c.fails("committed records never accepted", missing)
	c.fails("records accepted with a body other than the committed one", otherBody)
	var runsMissing []string
	for _, r := range c.runs {
		if !slices.ContainsFunc(accepted[r.SlotID], func(a soakAcceptance) bool { return a.RunID == r.RunID && a.Type == "ScheduleRun" }) {
			runsMissing = append(runsMissing, fmt.Sprintf("%s run_id %s fired %s attempt %d", r.SlotID, r.RunID, sqldb.DecodeTime(r.FiredAt).Format(time.TimeOnly), r.Attempt))
		}
	}
	c.fails("committed runs never accepted under their slot id with their run id", runsMissing)
}

// nothingUncommittedDelivered: no accepted key, and no accepted run id,
// is absent from the database.
func (c soakCheck) nothingUncommittedDelivered() {
	c.t.Helper()
	keys := map[string]bool{}
	for _, rec := range c.records {
		keys[rec.Key] = true
	}
	runIDs := map[string]string{}
	for _, r := range c.runs {
		runIDs[r.RunID] = r.SlotID
	}
	var absent, runsAbsent []string
	for _, a := range c.acc {
		if !keys[a.Key] {
			absent = append(absent, a.Type+" "+a.Key)
		}
		if a.Type == "ScheduleRun" && runIDs[a.RunID] != a.SlotID {
			runsAbsent = append(runsAbsent, fmt.Sprintf("%s run_id %s fired %s accepted %s", a.Key, a.RunID, a.FiredAt.Format("15:04:05.000"), a.At.Format("15:04:05.000")))
		}
	}
	c.fails("accepted records absent from the outbox", absent)
	c.fails("accepted runs whose run id is not committed for their slot", runsAbsent)
}

// noSlotDeliveredAndSkipped: no slot was both run (accepted, or
// committed) and covered by a SlotsSkipped record of its schedule
// (committed, or accepted).
func (c soakCheck) noSlotDeliveredAndSkipped() {
	c.t.Helper()
	type span struct {
		from, to time.Time
		key      string
	}
	skipped := map[string][]span{}
	addSkip := func(schedule, key string, from, to time.Time) {
		skipped[schedule] = append(skipped[schedule], span{from, to, key})
	}
	for _, rec := range c.records {
		if rec.Type != "SlotsSkipped" {
			continue
		}
		var s sink.SlotsSkippedRecord
		require.NoError(c.t, json.Unmarshal(rec.Body, &s))
		addSkip(s.Schedule, rec.Key, s.From.Time, s.To.Time)
	}
	for _, a := range c.acc {
		if a.Type == "SlotsSkipped" {
			addSkip(a.Schedule, a.Key, a.From, a.To)
		}
	}
	var both []string
	check := func(what, schedule string, slot time.Time) {
		for _, s := range skipped[schedule] {
			if !slot.Before(s.from) && !slot.After(s.to) {
				both = append(both, fmt.Sprintf("%s %s@%s and %s", what, schedule, slot.Format(time.RFC3339), s.key))
			}
		}
	}
	for _, r := range c.runs {
		check("committed", r.Schedule, sqldb.DecodeTime(r.Slot))
	}
	for _, a := range c.acc {
		if a.Type == "ScheduleRun" {
			check("accepted", a.Schedule, a.Slot)
		}
	}
	c.fails("slots both run and reported skipped", both)
}

// due is when a slot of a schedule falls due: the slot, plus its jitter
// (schedule.Definition's, derived from the slot id).
func (c soakCheck) due(name string, slot time.Time) time.Time {
	j := c.jitter[name]
	if j <= 0 {
		return slot
	}
	h := fnv.New64a()
	h.Write([]byte(schedule.SlotID(name, slot)))
	return slot.Add(time.Duration(h.Sum64() % uint64(j)))
}

// noRunEarly: no run fired before its slot fell due.
func (c soakCheck) noRunEarly() {
	c.t.Helper()
	var early []string
	for _, r := range c.runs {
		slot, fired := sqldb.DecodeTime(r.Slot), sqldb.DecodeTime(r.FiredAt)
		if due := c.due(r.Schedule, slot); fired.Before(due) {
			early = append(early, fmt.Sprintf("%s fired %s, due %s", r.SlotID, fired.Format("15:04:05.000"), due.Format("15:04:05.000")))
		}
	}
	c.fails("runs fired before their slot was due", early)
}

// backOnTime: after the last fault, every slot of every schedule whose
// boundary (the first minute boundary at or after it is due) is a quiet
// one fired in that boundary's pass: within the minute after it.
func (c soakCheck) backOnTime(b1 time.Time, quiet []time.Duration) {
	c.t.Helper()
	fired := map[string]time.Time{}
	for _, r := range c.runs {
		fired[r.SlotID] = sqldb.DecodeTime(r.FiredAt)
	}
	from, to := b1.Add(quiet[0]), b1.Add(quiet[len(quiet)-1])
	var late []string
	checked, worst := 0, time.Duration(0)
	for name, spec := range c.specs {
		// Slots from a minute and the largest jitter before the window.
		for slot := spec.Next(from.Add(-2 * time.Minute)); !slot.IsZero() && !slot.After(to); slot = spec.Next(slot) {
			boundary := ceilMinute(c.due(name, slot))
			if boundary.Before(from) || boundary.After(to) {
				continue
			}
			checked++
			at, ok := fired[schedule.SlotID(name, slot)]
			switch {
			case !ok:
				late = append(late, fmt.Sprintf("%s@%s (boundary %s) never fired", name, slot.Format(time.TimeOnly), boundary.Format(time.TimeOnly)))
			case at.Sub(boundary) >= time.Minute:
				late = append(late, fmt.Sprintf("%s@%s (boundary %s) fired %s", name, slot.Format(time.TimeOnly), boundary.Format(time.TimeOnly), at.Format("15:04:05.000")))
			default:
				worst = max(worst, at.Sub(boundary))
			}
		}
	}
	if len(late) > 0 {
		// Evidence: the runs of the first schedules behind.
		var names []string
		for _, l := range late {
			name, _, _ := strings.Cut(l, "@")
			if !slices.Contains(names, name) && len(names) < 3 {
				names = append(names, name)
			}
		}
		byName := map[string][]string{}
		for _, r := range c.runs {
			if slices.Contains(names, r.Schedule) {
				byName[r.Schedule] = append(byName[r.Schedule], fmt.Sprintf("%s fired %s (attempt %d)",
					sqldb.DecodeTime(r.Slot).Format(time.TimeOnly), sqldb.DecodeTime(r.FiredAt).Format("15:04:05.000"), r.Attempt))
			}
		}
		for _, name := range names {
			slices.Sort(byName[name])
			c.t.Logf("runs of %s: %s", name, strings.Join(byName[name], "; "))
		}
	}
	c.t.Logf("back on time: %d slots due at the quiet boundaries %s to %s, the latest fired %v after its boundary",
		checked, from.Format(time.TimeOnly), to.Format(time.TimeOnly), worst.Round(time.Millisecond))
	require.NotZero(c.t, checked, "no slot fell at a quiet boundary")
	c.fails("slots at a quiet boundary not fired in its pass", late)
}

func ceilMinute(t time.Time) time.Time {
	if f := t.Truncate(time.Minute); !f.Equal(t) {
		return f.Add(time.Minute)
	}
	return t
}

// report logs the figures: runs, deliveries, duplicates, the receiver's
// refusals and stalls, and the lateness from slot to first acceptance —
// of every run, and of the runs of live slots (falling due from B1 on:
// not the backlog of the five minutes before the start).
func (c soakCheck) report(recv *soakReceiver, b1 time.Time) {
	first := map[string]time.Time{}
	byType := map[string]int{}
	for _, a := range c.acc {
		byType[a.Type]++
		if f, ok := first[a.Key]; !ok || a.At.Before(f) {
			first[a.Key] = a.At
		}
	}
	var late, lateDue, live, liveDue []time.Duration
	for _, r := range c.runs {
		if at, ok := first[r.SlotID]; ok {
			slot := sqldb.DecodeTime(r.Slot)
			due := ceilMinute(c.due(r.Schedule, slot))
			late = append(late, at.Sub(slot))
			lateDue = append(lateDue, at.Sub(due))
			if !due.Before(b1) {
				live = append(live, at.Sub(slot))
				liveDue = append(liveDue, at.Sub(due))
			}
		}
	}
	recv.mu.Lock()
	defer recv.mu.Unlock()
	c.t.Logf("committed: %d runs, %d outbox records; receiver: %d requests, %d accepted (%v), %d duplicates, %d refused with 503, %d stalled for %v and accepted, of %d stalled",
		len(c.runs), len(c.records), recv.requests, len(c.acc), byType, len(c.acc)-len(first), recv.refused, recv.stalled, recv.plan.stallFor, recv.stalls)
	for _, l := range []struct {
		what       string
		slot, from []time.Duration
	}{{"every run", late, lateDue}, {"live slots", live, liveDue}} {
		c.t.Logf("%s (%d): slot to first acceptance p50 %v, p99 %v, max %v; from the boundary the slot fell due at p50 %v, p99 %v, max %v",
			l.what, len(l.slot), pct(l.slot, 50), pct(l.slot, 99), pct(l.slot, 100), pct(l.from, 50), pct(l.from, 99), pct(l.from, 100))
	}
}

func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := min(len(s)-1, (len(s)*p+99)/100-1)
	return s[max(i, 0)].Round(time.Millisecond)
}
