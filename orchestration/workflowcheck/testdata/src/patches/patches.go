// Package patches holds workflows that ask patches well and badly.
package patches

import (
	"context"

	"github.com/passage-of-time/passage/orchestration"
)

const courier = "ship-by-courier"

// Ship asks its patches well: constant ids, each once, its answers used,
// one of them in a loop (asked once per instance at run time).
func Ship(ctx orchestration.Context, n int) error {
	if orchestration.Patched(ctx, courier) {
		_ = n
	}
	orchestration.DeprecatePatch(ctx, "gift-wrap")
	for range n {
		if !orchestration.Patched(ctx, "loop") {
			return nil
		}
	}
	return nil
}

// Bad asks its patches badly.
func Bad(ctx orchestration.Context, id string) error {
	if orchestration.Patched(ctx, id) { // want `patch id of orchestration.Patched is not a constant string: its marker is matched by the id on every replay, under every later deploy; use a string constant`
		return nil
	}
	if orchestration.Patched(ctx, "v2-"+courier) { // a constant expression: fine
		return nil
	}
	orchestration.DeprecatePatch(ctx, "") // want `empty patch id: orchestration.DeprecatePatch leaves the instance stuck; name the change`
	if orchestration.Patched(ctx, courier) {
		return nil
	}
	if orchestration.Patched(ctx, "ship-by-courier") { // want `patch id "ship-by-courier" is asked again in this workflow \(first at line 36\): an id names one change at one place, where its marker stands; give this change its own id`
		return nil
	}
	orchestration.DeprecatePatch(ctx, courier) // want `patch id "ship-by-courier" is asked again in this workflow \(first at line 36\)`
	orchestration.Patched(ctx, "dropped")      // want `the answer of orchestration.Patched is not used: branch on it \(new code if true, the old if false\), or call orchestration.DeprecatePatch once the old branch is gone`
	_ = orchestration.Patched(ctx, "blank")    // want `the answer of orchestration.Patched is not used`
	_, err := orchestration.Step(ctx, "charge", func(context.Context, orchestration.StepInfo) (bool, error) {
		return orchestration.Patched(ctx, "in-step"), nil // want `orchestration.Patched in the body of a Step or Compensate: the body runs once and is not replayed, so its marker would stand where no replay asks for it; ask it in the workflow`
	})
	orchestration.Compensate(ctx, "refund", func(context.Context) error {
		orchestration.DeprecatePatch(ctx, "in-compensation") // want `orchestration.DeprecatePatch in the body of a Step or Compensate`
		return nil
	})
	check := func() bool { return orchestration.Patched(ctx, "ship-by-courier") } // want `patch id "ship-by-courier" is asked again in this workflow`
	_ = check
	return err
}

// Other is another workflow: its ids are its own.
var Other = func(ctx orchestration.Context) bool {
	inner := func(ctx orchestration.Context) bool { return orchestration.Patched(ctx, courier) }
	return orchestration.Patched(ctx, courier) && inner(ctx)
}
