package workflowcheck

import (
	"fmt"
	"go/types"
)

// Advice for each kind of forbidden function, by what to use instead.
const (
	useNow   = "the clock reads differently on replay; use ctx.Now()"
	useSleep = "a sleep is not durable and is not replayed; use ctx.Sleep"
	useTimer = "a timer is not durable and is not replayed; use ctx.Sleep, or orchestration.Await with a timeout"
	useRand  = "random values differ on replay; use ctx.NewID, or draw the value in a Step"
)

// timeFuncs are the package-level functions of package time that read the
// clock or wait on it, with the advice for each.
var timeFuncs = map[string]string{
	"Now":       useNow,
	"Since":     useNow,
	"Until":     useNow,
	"Sleep":     useSleep,
	"After":     useTimer,
	"Tick":      useTimer,
	"NewTimer":  useTimer,
	"NewTicker": useTimer,
	"AfterFunc": useTimer,
}

// forbidden returns the diagnostic for fn if workflow code must not use it.
func forbidden(fn *types.Func) (string, bool) {
	if fn.Pkg() == nil {
		return "", false
	}
	sig, _ := fn.Type().(*types.Signature)
	isMethod := sig != nil && sig.Recv() != nil
	switch fn.Pkg().Path() {
	case "time":
		if advice, ok := timeFuncs[fn.Name()]; ok && !isMethod {
			return fmt.Sprintf("time.%s in workflow code: %s", fn.Name(), advice), true
		}
	case "math/rand", "math/rand/v2":
		// Every function and method: even a seeded source is state the
		// history does not hold.
		return fmt.Sprintf("%s in workflow code: %s", fn.FullName(), useRand), true
	}
	return "", false
}
