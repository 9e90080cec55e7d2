package main_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/schedule"
	"github.com/passage-of-time/passage/tick"
)

// soakPlan is one mode of the soak. Offsets are from B1, the first
// minute boundary at least 8 s after the replicas start.
type soakPlan struct {
	schedules int
	// noBacklog stores the schedules as of now, not five minutes ago: no
	// missed slot for B1's pass to catch up, no SlotsSkipped.
	noBacklog bool
	// The receiver fails failRate of the requests in [failFrom, failTo)
	// with 503 (or, with failEvery, every failEvery-th request there, with
	// 500 and 503 in turn), and stalls the first stalls requests in
	// [stallFrom, stallTo) for stallFor each (then accepts them if the
	// sender still waits: the webhook gives up after 10 s).
	failFrom, failTo   time.Duration
	failRate           float64
	failEvery          int
	stallFrom, stallTo time.Duration
	stalls             int
	stallFor           time.Duration
	faults             []soakFault
	// quiet are the boundaries (offsets from B1, whole minutes) after the
	// last fault at which every slot must fire in its own boundary's pass.
	quiet []time.Duration
	// punctual, when its p99 is set, bounds the lateness of the slots
	// falling due at its boundaries (soakCheck.punctual).
	punctual soakPunctual
	// once: no record may be accepted twice (a plan without crashes).
	once bool
}

// soakPunctual asks that the slots falling due at the boundaries from
// B1+from to B1+to (whole minutes) were first accepted, p99 of them,
// less than p99 after the boundary each fell due at.
type soakPunctual struct {
	from, to, p99 time.Duration
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
	if mode == "stall" {
		// Issue 34's scenario: one slow receiver must hold back only its
		// own streams. 500/503 to every fifth POST for 90 s, three POSTs
		// stalled 40 s in the minute after B1+1m (while the receiver
		// fails), no kill; every live slot punctual. Without the backlog
		// of an outage: B1's pass would carry five minutes of runs (about
		// 1,100 records, 4 to 5 s of requests at 16 in flight and 45 ms
		// each), which no stall causes and which the live slots of B1
		// wait behind.
		return soakPlan{
			schedules: 300, noBacklog: true,
			failFrom: -5 * time.Second, failTo: 85 * time.Second, failEvery: 5,
			stallFrom: time.Minute, stallTo: 2 * time.Minute, stalls: 3, stallFor: 40 * time.Second,
			quiet:    []time.Duration{3 * time.Minute},
			punctual: soakPunctual{from: 0, to: 3 * time.Minute, p99: 5 * time.Second},
			once:     true,
		}
	}
	if mode == "long" {
		p := soakPlan{
			schedules: 500,
			failFrom:  1 * time.Minute, failTo: 3 * time.Minute, failRate: 0.2,
			stallFrom: 70 * time.Second, stallTo: 3 * time.Minute, stalls: 5, stallFor: 40 * time.Second,
			quiet: []time.Duration{14 * time.Minute, 15 * time.Minute, 16 * time.Minute},
			// The minutes after the last kill are as punctual as any.
			punctual: soakPunctual{from: 14 * time.Minute, to: 16 * time.Minute, p99: 5 * time.Second},
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
