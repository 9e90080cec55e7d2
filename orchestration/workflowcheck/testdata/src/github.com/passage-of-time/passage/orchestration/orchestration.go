// Package orchestration is a stub of the real package with the API that
// workflowcheck knows: only the names and signatures matter.
package orchestration

import (
	"context"
	"time"
)

// Context is what a workflow reads time, ids and delays from.
type Context interface {
	Now() time.Time
	NewID() string
	Sleep(d time.Duration) error
	SleepUntil(t time.Time) error
	Instance() string
}

// StepInfo describes the attempt of a step.
type StepInfo struct {
	Attempt int
	Key     string
}

// StepOption configures a step.
type StepOption func()

// Step runs fn once and records its result.
func Step[T any](ctx Context, name string, fn func(context.Context, StepInfo) (T, error), opts ...StepOption) (T, error) {
	var zero T
	return zero, nil
}

// Compensate registers fn to undo a step.
func Compensate(ctx Context, name string, fn func(context.Context) error) {}

// Await waits for a signal, at most timeout.
func Await[T any](ctx Context, signal string, timeout time.Duration) (T, bool, error) {
	var zero T
	return zero, false, nil
}

// Patched reports whether the instance takes the new branch of patch id.
func Patched(ctx Context, id string) bool { return true }

// DeprecatePatch stands where Patched stood once the old branch is gone.
func DeprecatePatch(ctx Context, id string) {}

// deadline takes a Context first like a workflow, but the engine's own
// package is not checked: nothing is reported.
func deadline(ctx Context, d time.Duration) time.Time {
	return time.Now().Add(d)
}

var _ = deadline
