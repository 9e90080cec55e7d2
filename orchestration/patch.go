package orchestration

import (
	"fmt"
)

// Patched reports whether the instance takes the new branch of a change
// to the workflow's code, named id: the way to change a workflow under
// instances that are already running.
//
//	if orchestration.Patched(ctx, "ship-by-courier") {
//		// the new code
//	} else {
//		// the code as it was, for the instances that passed here before
//	}
//
// The answer is the instance's, decided once, deterministically from its
// history, on every replay and every replica:
//
//   - an instance that reaches the call live — a new one, or one that was
//     waiting before this point when the patch was deployed — records a
//     patch marker (a decision, replayed like a step) and takes the new
//     branch: true;
//   - on a replay, the marker in the history at this point answers true;
//   - an instance whose history holds a later decision where the marker
//     would be passed this point before the patch was deployed, on the old
//     code: false, on every later wake-up. Its first execution that finds
//     so notes it in the history (not as a decision: it changes no answer),
//     so that the replayer and inspection know it needs the old branch.
//
// Asking the same id again in the instance returns the first answer
// without recording anything (a patch in a loop is decided once); an id
// names one change at one place in the code, and the workflowcheck
// analyzer reports one asked at two places of a function. An empty id
// leaves the instance stuck.
//
// The marker is checked like any decision: a history holding it where
// the code asks for something else (the Patched call removed, renamed, or
// moved past another decision) leaves the instance stuck with an error
// wrapping ErrNondeterministic that names the patch, and Engine.Replay
// reports it before a deploy. Another patch's marker at this point is how
// an instance that passed here before this patch, and took an older one
// just after, looks: the answer is false, and that marker must then be
// the next decision.
//
// When no running instance lacks the marker any more (ReadInstances with
// InstanceQuery.WithoutPatch, or ticker workflow list --without-patch),
// replace the branch with DeprecatePatch and the new code alone; when no
// running instance holds the marker either, remove the DeprecatePatch
// call. See docs/workflows.md for the whole sequence and what the
// replayer can and cannot tell when a step of it is taken too early.
func Patched(ctx Context, id string) bool {
	return ctx.execution().patch(id, false)
}

// DeprecatePatch stands where Patched(ctx, id) stood, once the old branch
// is gone: the instances that took the new branch have its marker here,
// the instances started since have none, and it accepts both, recording
// nothing. An instance whose history notes that it took the old branch
// of id (see Patched) still needs the code DeprecatePatch replaced: it is
// left stuck with an error wrapping ErrNondeterministic that names the
// patch, and Engine.Replay reports it before the deploy.
func DeprecatePatch(ctx Context, id string) {
	ctx.execution().patch(id, true)
}

// patch answers Patched(id), or DeprecatePatch(id) when deprecated: the
// instance's answer for id, decided at the first call.
func (x *execution) patch(id string, deprecated bool) bool {
	if x.stopped() {
		return false // unwinding: nothing more is recorded
	}
	if id == "" {
		x.stuck = fmt.Errorf("%w: %s with an empty patch id", ErrInvalidArgument, patchCall(deprecated, id))
		return false
	}
	if answer, ok := x.patches[id]; ok {
		return answer
	}
	answer := x.decidePatch(id, deprecated)
	if x.patches == nil {
		x.patches = map[string]bool{}
	}
	x.patches[id] = answer
	return answer
}

// decidePatch decides the answer of a patch asked for the first time in
// the instance, at the next decision.
func (x *execution) decidePatch(id string, deprecated bool) bool {
	switch e := x.peek().(type) {
	case patchMarked:
		if e.ID == id {
			x.next++
			return true
		}
	case nil:
		// The instance reaches the point now, under the new code.
		if !deprecated {
			x.record(patchMarked{ID: id})
		}
		return true
	}
	// A later decision stands where the marker would: the instance passed
	// this point before the patch was deployed.
	noted := x.notedOldBranch(id)
	if deprecated {
		if noted {
			x.stuck = x.oldBranchGone(id, patchCall(true, id)+" stands")
		}
		// Without the note the history cannot tell an instance started
		// after the deprecation from one that passed here before the
		// patch and has not woken since: the next decision tells.
		return true
	}
	if !noted && !x.replayOnly {
		x.record(patchOldBranch{ID: id, At: x.position()})
	}
	return false
}

// notedOldBranch reports whether the history notes that the instance
// takes the old branch of patch id.
func (x *execution) notedOldBranch(id string) bool {
	for _, n := range x.oldBranches {
		if n.ID == id {
			return true
		}
	}
	return false
}

// oldBranchGone returns the error of an instance that needs the old
// branch of patch id where the code now has where.
func (x *execution) oldBranchGone(id, where string) error {
	at := 0
	for _, n := range x.oldBranches {
		if n.ID == id {
			at = n.At
		}
	}
	return fmt.Errorf("%w: patch %q: the instance passed its point (decision %d) before the patch and takes its old branch, which is gone: %s; keep Patched(ctx, %q) and its old branch until no running instance lacks its marker",
		ErrNondeterministic, id, at+1, where, id)
}

// passedOldBranch returns a patch whose old branch the history notes the
// instance takes and whose point the replay has reached without the code
// asking it.
func (x *execution) passedOldBranch() (string, bool) {
	for _, n := range x.oldBranches {
		if _, asked := x.patches[n.ID]; !asked && x.position() >= n.At {
			return n.ID, true
		}
	}
	return "", false
}

// checkOldBranches leaves the instance stuck if its replay has passed
// the point of a patch whose old branch the history notes it takes,
// without the code asking that patch: the code that ran there is gone.
// It is called before a step's side effect runs and when the function
// returns, so that nothing is done on a path the instance never took.
func (x *execution) checkOldBranches() {
	if x.stuck != nil || len(x.oldBranches) == 0 {
		return
	}
	if id, ok := x.passedOldBranch(); ok {
		x.stuck = x.oldBranchGone(id, fmt.Sprintf("the code no longer asks Patched(ctx, %q)", id))
	}
}

// patchCall names a call of Patched or DeprecatePatch in errors.
func patchCall(deprecated bool, id string) string {
	if deprecated {
		return fmt.Sprintf("DeprecatePatch(ctx, %q)", id)
	}
	return fmt.Sprintf("Patched(ctx, %q)", id)
}
