// Package workflowcheck is a static check, in the form of a go/analysis
// analyzer, that reports code inside workflow functions that would not replay
// deterministically.
//
// An orchestration workflow is replayed from its event stream: every time the
// instance runs, the Go function runs again from the top, and the engine
// returns recorded results for the steps and delays already in the history.
// Replay only works when the function takes the same path every time, so a
// workflow may read time, ids and randomness only through its
// orchestration.Context, and may do side effects only inside a Step.
//
// A workflow function is any function declaration or function literal whose
// first parameter has type orchestration.Context (the receiver of a method
// does not count). Inside it, and inside the closures it contains, the
// analyzer reports:
//
//   - time.Now, time.Since and time.Until: use ctx.Now();
//   - time.Sleep: use ctx.Sleep;
//   - time.After, time.Tick, time.NewTimer, time.NewTicker and time.AfterFunc:
//     use ctx.Sleep, or orchestration.Await with a timeout;
//   - any function of math/rand or math/rand/v2, and any method of their
//     types: use ctx.NewID, or draw the value in a Step;
//   - go statements, and sync.WaitGroup.Go, which starts a goroutine without
//     one: do concurrent work in a Step;
//   - range over a map, or over maps.All, maps.Keys or maps.Values: the
//     iteration order differs between runs, so sort the keys first (for
//     example with slices.Sorted(maps.Keys(m)));
//   - select statements: channel timing is not replayed;
//   - channel receives (<-ch, v, ok := <-ch) and range over a channel: what
//     arrives and when is not in the history, so wait for a signal with
//     orchestration.Await;
//   - channel sends (ch <- v): a send waits for another goroutine, and
//     whatever it tells the receiver happens again on every replay, so send
//     in a Step, or signal the other instance. A send on a buffered channel
//     that the workflow also drains would be deterministic, but it is
//     reported too: so is its receive, and a slice does the same job.
//
// A select statement is reported once: the receives and sends of its cases
// are not reported again.
//
// The functions are reported wherever they appear, called or taken as a
// value (f := time.Now), under any import name. A method that merely shares a
// name, such as ctx.Now or clock.Now, is not reported.
//
// The function passed as the third argument of orchestration.Step or of
// orchestration.Compensate is not workflow code: it runs once and its result
// is recorded, so side effects belong there and are not reported. The
// orchestration package itself is not checked; its tests and every other
// package are.
//
// # Patches
//
// A change to a workflow under running instances goes behind
// orchestration.Patched(ctx, id), later orchestration.DeprecatePatch(ctx,
// id); the instance's marker is matched by the id, where it was recorded,
// on every replay under every later deploy. In every function of a
// package that sees the orchestration package the analyzer reports:
//
//   - a patch id that is not a constant string (a constant expression such
//     as "v2-"+name is one): an id computed at run time may differ between
//     replays and deploys;
//   - an empty id, which leaves the instance stuck;
//   - an id asked at two places of one workflow function, Patched or
//     DeprecatePatch alike (closures inside it count as it; another
//     workflow, declared or literal, has ids of its own): the marker
//     stands where the first place asked, and deprecating or removing
//     one place would leave the other wrong. A loop is one place: the
//     engine decides it once per instance. Helpers called from the
//     workflow are not followed for this;
//   - Patched whose answer is dropped (a statement, or assigned to _): the
//     marker is recorded and no branch depends on it; DeprecatePatch is
//     the call for code without an old branch;
//   - either call in the body given to Step or Compensate, which runs once
//     and is not replayed, so its marker would stand where no replay asks
//     for it.
//
// # Calls
//
// A workflow that calls a function that breaks a rule, in its body or in
// functions it calls in turn, is reported at the call, with the chain of
// calls down to the rule and the rule's advice:
//
//	shop/order.go:22:6: call to pricing.Today in workflow code: pricing.Today → clock.Read → time.Now: the clock reads differently on replay; use ctx.Now()
//
// To do this the analyzer gives every function and method that is not a
// workflow a fact (an analysis.Fact, which go vet carries from a package to
// the packages that import it) when its body, read as if it were workflow
// code, breaks a rule or calls a function with a fact. The body of Step or
// Compensate inside such a function is exempt as it is in a workflow, and a
// workflow literal inside it is checked where it is, not counted. A
// workflow function has no fact: its own code is reported in it. Each chain
// is one of the shortest, and recursion ends. A function taken as a value
// in workflow code (f := helper) is reported as a call would be; a function
// that is not a workflow, such as a step body given to Step by name, may
// call anything.
//
// Calls are followed when the analyzer knows the function called: calls of
// functions by name and of methods on concrete types, generic or not. A
// call through an interface method or a function value (a parameter, a
// field, a variable) cannot be followed and is not reported.
//
// Calls into the standard library are not followed: log.Printf reads the
// clock and fmt.Println may block on a pipe, and following them reaches the
// runtime's own goroutines, so nearly every call would be reported. The
// rules above name the standard library's non-deterministic functions
// instead. Calls into every other package are followed, this module's and
// its dependencies'. Under go vet a package of a module has a module path
// and the standard library has none; drivers that leave the module empty
// (analysistest, a GOPATH build) fall back on the import path: one whose
// first element has a dot, such as example.com/shop, is followed, as the
// standard library's never has one. A package that is not followed keeps
// its functions' facts to itself, so in a GOPATH package with a dotless path
// calls within the package are still followed.
//
// # Running it
//
// Install the command and hand it to go vet as its tool:
//
//	go install github.com/passage-of-time/passage/cmd/workflowcheck@latest
//	go vet -vettool=$(go env GOPATH)/bin/workflowcheck ./...
//
// From a clone of this repository, go install ./cmd/workflowcheck does the
// first step. Findings look like this, and make go vet exit non-zero:
//
//	shop/order.go:13:12: time.Now in workflow code: the clock reads differently on replay; use ctx.Now()
//	shop/order.go:14:19: range over map in workflow code: iteration order is random; range over the sorted keys instead
//	shop/order.go:19:2: go statement in workflow code: goroutines are not replayed; do concurrent work in a Step
//	shop/order.go:20:6: call to shop.stamp in workflow code: shop.stamp → time.Now: the clock reads differently on replay; use ctx.Now()
//
// The command also runs on its own (workflowcheck ./...), with the usual
// flags of a single analyzer, such as -json or -c=N for context lines.
package workflowcheck
