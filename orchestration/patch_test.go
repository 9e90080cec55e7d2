package orchestration

import (
	"context"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/internal/sqldbtest"
)

// shipCode is a version of the shipping workflow's code, as a patch goes
// through its deploys.
type shipCode int

const (
	shipByPost     shipCode = iota // before the patch
	shipPatched                    // if Patched("courier") by courier, else by post
	shipDeprecated                 // DeprecatePatch("courier"), by courier
	shipRemoved                    // by courier, the patch call gone
	shipRewritten                  // by courier, the patch gone and its step renamed "send"
	shipRenamed                    // Patched("courier-v2"): the id changed by mistake
)

// shipping charges, sleeps an hour, ships — the patch's point —, then
// sleeps wait hours and notifies, sleeps wait hours and thanks. Both
// branches ship in a step named "ship" (but shipRewritten's), and count
// their side effects apart ("ship by post"). It returns the branch its
// code took, then how the recorded shipment went: "post/post" is an
// instance that shipped by post and replays the old branch.
func shipping(code shipCode, fx *effects) func(Context, int) (string, error) {
	return func(ctx Context, wait int) (string, error) {
		do := func(name, effect, result string) (string, error) {
			return Step(ctx, name, func(context.Context, StepInfo) (string, error) { fx.do(effect); return result, nil })
		}
		if _, err := do("charge", "charge", ""); err != nil {
			return "", err
		}
		if err := ctx.Sleep(time.Hour); err != nil {
			return "", err
		}
		branch, step := "post", "ship"
		switch code {
		case shipPatched:
			if Patched(ctx, "courier") {
				branch = "courier"
			}
		case shipRenamed:
			if Patched(ctx, "courier-v2") {
				branch = "courier"
			}
		case shipDeprecated:
			DeprecatePatch(ctx, "courier")
			branch = "courier"
		case shipRemoved:
			branch = "courier"
		case shipRewritten:
			branch, step = "courier", "send"
		}
		by, err := do(step, "ship by "+branch, branch)
		if err != nil {
			return "", err
		}
		for _, name := range []string{"notify", "thank"} {
			if err := ctx.Sleep(time.Duration(wait) * time.Hour); err != nil {
				return "", err
			}
			if _, err := do(name, name, ""); err != nil {
				return "", err
			}
		}
		return branch + "/" + by, nil
	}
}

// deploys runs versions of the shipping code as processes on one
// database and one fake clock, counting their side effects together.
type deploys struct {
	t     *testing.T
	db    *sqlx.DB
	clock *clockwork.FakeClock
	fx    *effects
}

func newDeploys(t *testing.T, b sqldbtest.Backend) *deploys {
	t.Helper()
	db, _ := b.Open(t)
	return &deploys{t, db.DB, clockwork.NewFakeClockAt(t0), &effects{}}
}

// world starts a process running code.
func (d *deploys) world(code shipCode) *world {
	d.t.Helper()
	return newWorld(d.t, d.db, d.clock, func(e *Engine) {
		require.NoError(d.t, Register(e, "ship", shipping(code, d.fx)))
	})
}

// start starts an instance that sleeps wait hours after the point.
func (d *deploys) start(w *world, instance string, wait int) {
	d.t.Helper()
	_, err := Start(context.Background(), w.e, "ship", instance, wait)
	require.NoError(d.t, err)
}

// untilDeprecation runs the shipping code before the patch, patched, and
// deprecated, until four instances are each on a side: passed passed the
// point before the patch, then woke under it (its old branch is noted);
// unwoken passed it before the patch and sleeps on; marked took the new
// branch; fresh, started under DeprecatePatch, is charged, before the
// point.
func (d *deploys) untilDeprecation() {
	d.t.Helper()
	old := d.world(shipByPost)
	d.start(old, "passed", 1)
	d.start(old, "unwoken", 99)
	old.tick()
	d.clock.Advance(time.Hour)
	old.tick() // both ship by post
	patched := d.world(shipPatched)
	d.start(patched, "marked", 1)
	patched.tick()
	d.clock.Advance(time.Hour)
	patched.tick() // passed notes its old branch and notifies; marked ships by courier
	deprecated := d.world(shipDeprecated)
	d.start(deprecated, "fresh", 1)
	deprecated.tick()
}

// patchEvents counts an instance's patch markers and old-branch notes.
func patchEvents(t *testing.T, w *world, instance string) (markers, oldBranches int) {
	t.Helper()
	for _, r := range historyOf(t, w, instance) {
		switch r.Event.(type) {
		case patchMarked:
			markers++
		case patchOldBranch:
			oldBranches++
		}
	}
	return markers, oldBranches
}

// An instance that shipped by post before the patch was deployed replays
// the old branch on every later wake-up, on either replica, and is noted
// once; one that was sleeping before the point when the patch came, and
// one started after, record the marker and ship by courier.
func TestAPatchKeepsTheInstancesThatPassedItOnTheOldBranch(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			d := newDeploys(t, b)
			old := d.world(shipByPost)
			d.start(old, "passed", 1)
			old.tick() // charged, sleeping until t0+1h
			d.clock.Advance(time.Hour)
			d.start(old, "waiting", 1)
			old.tick() // passed ships by post; waiting is charged and sleeps before the point

			replicas := []*world{d.world(shipPatched), d.world(shipPatched)}
			d.start(replicas[0], "new", 1)
			replicas[0].tick()
			for i := range 3 { // each wake-up on the other replica
				d.clock.Advance(time.Hour)
				replicas[(i+1)%2].tick()
			}

			for id, want := range map[string]string{"passed": "post/post", "waiting": "courier/courier", "new": "courier/courier"} {
				out, st, err := Result[string](ctx, replicas[0].e, id)
				require.NoError(t, err, "%s: %+v", id, st)
				require.Equal(t, want, out, id)
			}
			require.Equal(t, 1, d.fx.count("ship by post"))
			require.Equal(t, 2, d.fx.count("ship by courier"))
			require.Equal(t, 3, d.fx.count("notify"))
			markers, notes := patchEvents(t, old, "passed")
			require.Equal(t, [2]int{0, 1}, [2]int{markers, notes}, "no marker; the old branch noted once over two wake-ups")
			for _, id := range []string{"waiting", "new"} {
				markers, notes := patchEvents(t, old, id)
				require.Equal(t, [2]int{1, 0}, [2]int{markers, notes}, id)
			}
			for _, id := range []string{"passed", "waiting", "new"} {
				require.NoError(t, replicas[1].e.Replay(ctx, id), "the patched code replays every history")
			}
		})
	}
}

// replayCase is what Engine.Replay says of an instance's history under a
// version of the code: nil, or an error wrapping ErrNondeterministic
// holding each of want.
type replayCase struct {
	code     shipCode
	instance string
	want     []string
}

// The steps of the deploy sequence taken too early, checked by Replay
// before the deploy: what a history says about the patch is reported
// naming it and the instance; an instance that passed the point before
// the patch and never woke since says nothing about it, so only a
// changed decision tells (see docs/workflows.md).
func TestReplayTellsWhichInstancesStillNeedAPatchsBranches(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			d := newDeploys(t, b)
			d.untilDeprecation()

			oldBranch := `patch "courier": the instance passed its point (decision 4) before the patch and takes its old branch, which is gone`
			marker := `the marker of patch "courier"`
			for _, c := range []replayCase{
				{shipDeprecated, "marked", nil},
				{shipDeprecated, "fresh", nil},
				{shipDeprecated, "passed", []string{oldBranch, `DeprecatePatch(ctx, "courier") stands`}},
				{shipDeprecated, "unwoken", nil}, // nothing in its history tells
				{shipRemoved, "fresh", nil},
				{shipRemoved, "marked", []string{`the code asks for Step "ship" where the history (event 4 of its decisions) has ` + marker, `must ask Patched(ctx, "courier") or DeprecatePatch(ctx, "courier") here`}},
				{shipRemoved, "passed", []string{oldBranch, `the code no longer asks Patched(ctx, "courier")`}},
				{shipRemoved, "unwoken", nil}, // the same step replays: nothing tells
				{shipRewritten, "passed", []string{oldBranch, `the code asks for Step "send" where the history (event 4 of its decisions) has Step "ship"`}},
				{shipRewritten, "unwoken", []string{`the code asks for Step "send" where the history (event 4 of its decisions) has Step "ship"`}},
				{shipRenamed, "marked", []string{`the code asks for Step "ship" where the history (event 4 of its decisions) has ` + marker}},
				{shipRenamed, "passed", []string{oldBranch, `the code no longer asks Patched(ctx, "courier")`}},
			} {
				err := d.world(c.code).e.Replay(ctx, c.instance)
				if c.want == nil {
					require.NoError(t, err, "code %d, %s", c.code, c.instance)
					continue
				}
				require.ErrorIs(t, err, ErrNondeterministic, "code %d, %s", c.code, c.instance)
				for _, w := range append(c.want, "replay "+c.instance+":") {
					require.ErrorContains(t, err, w, "code %d", c.code)
				}
			}

			// Deployed all the same, the removal leaves the instances
			// that need what it removed stuck, before anything runs on
			// a path they never took.
			removed := d.world(shipRemoved)
			d.clock.Advance(time.Hour)
			removed.tick()
			for id, want := range map[string]string{"passed": oldBranch, "marked": marker} {
				st, err := removed.e.Status(ctx, id)
				require.NoError(t, err)
				require.Equal(t, Stuck, st.State, id)
				require.Contains(t, st.Error, want, id)
			}
			require.Zero(t, d.fx.count("thank"), "passed stuck before its next step ran")
			require.Equal(t, 2, d.fx.count("ship by courier"), "marked, then fresh")
			markers, notes := patchEvents(t, removed, "fresh")
			require.Equal(t, [2]int{0, 0}, [2]int{markers, notes}, "DeprecatePatch records nothing")
		})
	}
}

// loop runs n iterations of a step and an hour's sleep; patched code
// asks Patched("new") in each, and names the step by the answer. It
// returns the branches taken, "o" or "n" for each.
func loop(patched bool) func(Context, int) (string, error) {
	return func(ctx Context, n int) (string, error) {
		path := ""
		for range n {
			branch := "o"
			if patched && Patched(ctx, "new") {
				branch = "n"
			}
			if _, err := Step(ctx, branch, func(context.Context, StepInfo) (bool, error) { return true, nil }); err != nil {
				return "", err
			}
			path += branch
			if err := ctx.Sleep(time.Hour); err != nil {
				return "", err
			}
		}
		return path, nil
	}
}

// A patch asked in a loop is decided once for the instance: an instance
// whose first iteration ran before the patch stays on the old branch for
// the iterations after it, and a new one records one marker, not one per
// iteration.
func TestAPatchInALoopIsDecidedOnce(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			clock := clockwork.NewFakeClockAt(t0)
			old := newWorld(t, db.DB, clock, func(e *Engine) { require.NoError(t, Register(e, "loop", loop(false))) })
			_, err := Start(ctx, old.e, "loop", "old", 3)
			require.NoError(t, err)
			old.tick()
			patched := newWorld(t, db.DB, clock, func(e *Engine) { require.NoError(t, Register(e, "loop", loop(true))) })
			_, err = Start(ctx, patched.e, "loop", "new", 3)
			require.NoError(t, err)
			patched.runUntilQuiet(t0.Add(24 * time.Hour))
			for id, want := range map[string]string{"old": "ooo", "new": "nnn"} {
				out, st, err := Result[string](ctx, patched.e, id)
				require.NoError(t, err, "%+v", st)
				require.Equal(t, want, out)
			}
			markers, notes := patchEvents(t, patched, "new")
			require.Equal(t, [2]int{1, 0}, [2]int{markers, notes})
			markers, notes = patchEvents(t, patched, "old")
			require.Equal(t, [2]int{0, 1}, [2]int{markers, notes})
		})
	}
}

// An empty patch id leaves the instance stuck saying so, and so does code
// that returns where the history holds a patch's marker: ending the
// instance there would drop what the history says came next.
func TestBadPatchesLeaveTheInstanceStuckNamingThem(t *testing.T) {
	t.Parallel()
	for _, b := range sqldbtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := b.Open(t)
			clock := clockwork.NewFakeClockAt(t0)
			patchedThenSleep := func(ctx Context, id string) (bool, error) {
				p := Patched(ctx, id)
				return p, ctx.Sleep(time.Hour)
			}
			w := newWorld(t, db.DB, clock, func(e *Engine) { require.NoError(t, Register(e, "p", patchedThenSleep)) })
			for _, id := range []string{"", "p"} {
				_, err := Start(ctx, w.e, "p", "id-"+id, id)
				require.NoError(t, err)
			}
			w.tick()
			st, err := w.e.Status(ctx, "id-")
			require.NoError(t, err)
			require.Equal(t, Stuck, st.State)
			require.Contains(t, st.Error, `invalid argument: Patched(ctx, "") with an empty patch id`)

			removed := newWorld(t, db.DB, clock, func(e *Engine) {
				require.NoError(t, Register(e, "p", func(Context, string) (bool, error) { return true, nil }))
			})
			require.ErrorContains(t, removed.e.Replay(ctx, "id-p"), `replay id-p: orchestration: the history does not match the function: the code ended before the marker of patch "p"`)
			clock.Advance(time.Hour)
			removed.tick()
			st, err = w.e.Status(ctx, "id-p")
			require.NoError(t, err)
			require.Equal(t, Stuck, st.State, "not completed")
			require.Contains(t, st.Error, `the code ended before the marker of patch "p"`)
		})
	}
}
