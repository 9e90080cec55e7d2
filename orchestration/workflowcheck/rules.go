package workflowcheck

import (
	"go/types"
)

// Advice for each kind of forbidden code, by what to use instead.
const (
	useNow      = "the clock reads differently on replay; use ctx.Now()"
	useSleep    = "a sleep is not durable and is not replayed; use ctx.Sleep"
	useTimer    = "a timer is not durable and is not replayed; use ctx.Sleep, or orchestration.Await with a timeout"
	useRand     = "random values differ on replay; use ctx.NewID, or draw the value in a Step"
	useStep     = "goroutines are not replayed; do concurrent work in a Step"
	useAwait    = "channel timing is not replayed; wait with ctx.Sleep or orchestration.Await"
	useSignal   = "what arrives and when is not in the history; wait for a signal with orchestration.Await"
	useSendStep = "a send waits on another goroutine and is repeated on every replay; send in a Step, or signal the other instance"
	useSorted   = "iteration order is random; range over the sorted keys instead"
	useSortKeys = "iteration order is random; range over slices.Sorted(maps.Keys(m)) instead"
)

// The findings of the rules that are statements or expressions rather than
// functions.
var (
	goStmt        = finding{"go statement", useStep}
	selectStmt    = finding{"select statement", useAwait}
	receive       = finding{"channel receive", useSignal}
	send          = finding{"channel send", useSendStep}
	rangeOverMap  = finding{"range over map", useSorted}
	rangeOverChan = finding{"range over channel", useSignal}
)

// A finding is one thing workflow code must not do: what it is, as the
// diagnostic names it, and what to do instead.
type finding struct {
	what, advice string
}

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

// forbidden returns the finding for fn if workflow code must not use it.
func forbidden(fn *types.Func) (finding, bool) {
	if fn.Pkg() == nil {
		return finding{}, false
	}
	recv := fn.Signature().Recv()
	switch fn.Pkg().Path() {
	case "time":
		if advice, ok := timeFuncs[fn.Name()]; ok && recv == nil {
			return finding{"time." + fn.Name(), advice}, true
		}
	case "math/rand", "math/rand/v2":
		// Every function and method: even a seeded source is state the
		// history does not hold.
		return finding{fn.FullName(), useRand}, true
	case "sync":
		// WaitGroup.Go (Go 1.25) starts a goroutine without a go statement.
		if recv != nil && fn.Name() == "Go" && isNamed(recv.Type(), "sync", "WaitGroup") {
			return finding{"sync.WaitGroup.Go", "it starts a goroutine, and " + useStep}, true
		}
	}
	return finding{}, false
}

// isNamed says whether t, or the type t points to, is the named type
// pkg.name.
func isNamed(t types.Type, pkg, name string) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	named, ok := types.Unalias(t).(*types.Named)
	if !ok {
		return false
	}
	obj := named.Obj()
	return obj.Name() == name && obj.Pkg() != nil && obj.Pkg().Path() == pkg
}
