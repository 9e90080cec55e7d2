package orchestration

import "context"

// Compensate registers fn to undo what the workflow did so far: if the
// function fails or is cancelled, the compensations run in reverse order
// of registration (a saga), each at least once and recorded.
func Compensate(ctx Context, name string, fn func(context.Context) error) {
	x := ctx.execution()
	x.compensations = append(x.compensations, compensation{name, fn})
}
