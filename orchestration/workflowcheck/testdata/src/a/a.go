// Package a holds workflows that break each rule, and code that may.
package a

import (
	"context"
	"maps"
	mrand "math/rand"
	randv2 "math/rand/v2"
	"slices"
	"sync"
	t "time"

	"github.com/passage-of-time/passage/orchestration"
)

// Order is a workflow function declaration that breaks every rule.
func Order(ctx orchestration.Context, items map[string]int) (int, error) {
	start := t.Now()                   // want `time.Now in workflow code: the clock reads differently on replay; use ctx.Now\(\)`
	_ = t.Since(start)                 // want `time.Since in workflow code: the clock reads differently on replay; use ctx.Now\(\)`
	_ = t.Until(start)                 // want `time.Until in workflow code: the clock reads differently on replay; use ctx.Now\(\)`
	t.Sleep(t.Second)                  // want `time.Sleep in workflow code: a sleep is not durable and is not replayed; use ctx.Sleep`
	<-t.After(t.Second)                // want `channel receive in workflow code` `time.After in workflow code: a timer is not durable and is not replayed; use ctx.Sleep, or orchestration.Await with a timeout`
	_ = t.Tick(t.Second)               // want `time.Tick in workflow code: a timer`
	_ = t.NewTimer(1)                  // want `time.NewTimer in workflow code: a timer`
	_ = t.NewTicker(1)                 // want `time.NewTicker in workflow code: a timer`
	t.AfterFunc(1, func() {})          // want `time.AfterFunc in workflow code: a timer`
	n := mrand.Intn(10)                // want `math/rand.Intn in workflow code: random values differ on replay; use ctx.NewID, or draw the value in a Step`
	n += randv2.IntN(10)               // want `math/rand/v2.IntN in workflow code: random values`
	r := mrand.New(mrand.NewSource(1)) // want `math/rand.New in workflow code` `math/rand.NewSource in workflow code`
	n += r.Intn(3)                     // want `\(\*math/rand.Rand\).Intn in workflow code`
	go func() {}()                     // want `go statement in workflow code: goroutines are not replayed; do concurrent work in a Step`
	for k := range items {             // want `range over map in workflow code: iteration order is random; range over the sorted keys instead`
		_ = k
	}
	for k := range maps.Keys(items) { // want `range over maps.Keys in workflow code: iteration order is random; range over slices.Sorted\(maps.Keys\(m\)\) instead`
		_ = k
	}
	for _, k := range slices.Sorted(maps.Keys(items)) { // sorted: fine
		_ = k
	}
	ch := make(chan int)
	select { // want `select statement in workflow code: channel timing is not replayed; wait with ctx.Sleep or orchestration.Await`
	case <-ch:
	default:
	}
	_ = ctx.Now() // the Context's clock: fine
	return n, ctx.Sleep(t.Second)
}

// Values reports the functions taken as values, not only called.
func Values(ctx orchestration.Context) {
	now := t.Now       // want `time.Now in workflow code`
	sleep := t.Sleep   // want `time.Sleep in workflow code`
	pick := mrand.Intn // want `math/rand.Intn in workflow code`
	_, _, _ = now, sleep, pick
}

// Literal is a workflow written as a function literal.
var Literal = func(ctx orchestration.Context) error {
	_ = t.Now()               // want `time.Now in workflow code`
	t.Sleep(1)                // want `time.Sleep in workflow code`
	_ = mrand.Int()           // want `math/rand.Int in workflow code`
	go func() {}()            // want `go statement in workflow code`
	for range map[int]int{} { // want `range over map in workflow code`
	}
	select {} // want `select statement in workflow code`
}

// Closure checks a function literal that a workflow calls: it is workflow
// code too, however deep.
func Closure(ctx orchestration.Context) {
	stamp := func() t.Time {
		return func() t.Time {
			return t.Now() // want `time.Now in workflow code`
		}()
	}
	_ = stamp()
}

// Steps does its side effects in Step and Compensate bodies: none is reported.
func Steps(ctx orchestration.Context) (int, error) {
	n, err := orchestration.Step(ctx, "draw", func(context.Context, orchestration.StepInfo) (int, error) {
		t.Sleep(t.Millisecond)
		go func() {}()
		for range map[int]int{} {
		}
		return mrand.Intn(10) + t.Now().Second(), nil
	})
	if err != nil {
		return 0, err
	}
	// Explicit instantiation and a named function.
	_, _ = orchestration.Step[int](ctx, "named", draw)
	orchestration.Compensate(ctx, "undo", func(context.Context) error {
		t.Sleep(t.Millisecond)
		return nil
	})
	// The other arguments of Step are still workflow code.
	_, _ = orchestration.Step(ctx, t.Now().String(), draw) // want `time.Now in workflow code`
	return n, nil
}

// Channels receives, sends and starts a goroutine without go: each is
// reported once, a select statement whole.
func Channels(ctx orchestration.Context, ch chan int, wg *sync.WaitGroup) {
	<-ch           // want `channel receive in workflow code: what arrives and when is not in the history; wait for a signal with orchestration.Await`
	v, ok := <-ch  // want `channel receive in workflow code`
	ch <- v        // want `channel send in workflow code: a send waits on another goroutine and is repeated on every replay; send in a Step, or signal the other instance`
	for range ch { // want `range over channel in workflow code: what arrives and when is not in the history`
	}
	wg.Go(func() {}) // want `sync.WaitGroup.Go in workflow code: it starts a goroutine, and goroutines are not replayed; do concurrent work in a Step`
	start := wg.Go   // want `sync.WaitGroup.Go in workflow code`
	select {         // want `select statement in workflow code`
	case x := <-ch:
		_ = x + t.Now().Second() // want `time.Now in workflow code`
	case ch <- mrand.Int(): // want `math/rand.Int in workflow code`
	}
	wg.Add(1) // the rest of WaitGroup: fine
	wg.Wait()
	_, _ = ok, start
	_, _ = orchestration.Step(ctx, "fan out", func(context.Context, orchestration.StepInfo) (int, error) {
		wg.Go(func() { ch <- 1 })
		return <-ch, nil
	})
}

// stamp reads the clock for the workflow below: in a package taken for the
// standard library its fact stays in the package, and is followed there.
func stamp() t.Time { return t.Now() }

// UsesHelper calls a helper of its own package.
func UsesHelper(ctx orchestration.Context) {
	_ = stamp() // want `call to a.stamp in workflow code: a.stamp → time.Now: the clock reads differently on replay; use ctx.Now\(\)`
}

// StepInClosure: a Step inside a closure of a workflow is exempt too.
func StepInClosure(ctx orchestration.Context) {
	do := func() {
		_, _ = orchestration.Step(ctx, "s", func(context.Context, orchestration.StepInfo) (t.Time, error) {
			return t.Now(), nil
		})
	}
	do()
}

// draw is a step body by name: not a workflow.
func draw(context.Context, orchestration.StepInfo) (int, error) {
	return mrand.Intn(6), nil
}

// Plain is an ordinary function: nothing is reported.
func Plain(items map[string]int) t.Time {
	t.Sleep(1)
	go func() {}()
	for range items {
	}
	_ = mrand.Intn(2)
	return t.Now()
}

// clock has a method named Now, like time's function.
type clock struct{}

func (clock) Now() t.Time { return t.Time{} }

func (clock) Sleep(t.Duration) {}

// Methods calls and takes methods that share the forbidden names: fine.
func Methods(ctx orchestration.Context, c clock) {
	_ = c.Now()
	c.Sleep(1)
	f := c.Now
	g := ctx.Now
	_, _ = f(), g()
	var when t.Time = ctx.Now()
	_ = when.Add(t.Second).Sub(when) // methods of time.Time: fine
}

// worker has a workflow method: the receiver does not count, the first
// parameter does.
type worker struct{}

func (worker) Run(ctx orchestration.Context) {
	_ = t.Now() // want `time.Now in workflow code`
}

// NotFirst takes a Context second: not a workflow function.
func NotFirst(x int, ctx orchestration.Context) {
	_ = t.Now()
}

// Nested: a workflow literal inside a plain function is checked.
func Nested() {
	run := func(ctx orchestration.Context) {
		t.Sleep(1) // want `time.Sleep in workflow code`
	}
	_ = run
	_ = t.Now()
}
