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
//   - go statements: do concurrent work in a Step;
//   - range over a map, or over maps.All, maps.Keys or maps.Values: the
//     iteration order differs between runs, so sort the keys first (for
//     example with slices.Sorted(maps.Keys(m)));
//   - select statements: channel timing is not replayed.
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
//
// The command also runs on its own (workflowcheck ./...), with the usual
// flags of a single analyzer, such as -json or -c=N for context lines.
package workflowcheck
