// Package dot imports time with a dot and aliases the Context type.
package dot

import (
	. "time"

	"github.com/passage-of-time/passage/orchestration"
)

// Ctx is an alias: a workflow whose first parameter uses it is a workflow.
type Ctx = orchestration.Context

// Flow uses time's functions through a dot import.
func Flow(ctx Ctx) {
	_ = Now()        // want `time.Now in workflow code`
	Sleep(Second)    // want `time.Sleep in workflow code`
	_ = Since(Now()) // want `time.Since in workflow code` `time.Now in workflow code`
}
