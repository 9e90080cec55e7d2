package todolist

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	ptel "github.com/passage-of-time/passage/internal/telemetry"
	"github.com/passage-of-time/passage/internal/timefmt"
)

// The attributes of the spans. Unlike a metric's, a span's attributes may
// name the item: a span is one item's (or one batch's).
const (
	attrList      = "passage.todolist.list"
	attrItemID    = "passage.todolist.item.id"
	attrItemDue   = "passage.todolist.item.due"
	attrAttempts  = "passage.todolist.item.attempts"
	attrLateness  = "passage.todolist.lateness"
	attrConflict  = "passage.todolist.conflict"
	attrBatchSize = "passage.todolist.batch.size"
	attrFailed    = "passage.todolist.batch.failed"
	attrConflicts = "passage.todolist.batch.conflicts"
)

// tracing starts the spans of a list's actions, none without an SDK
// (internal/telemetry tells).
type tracing struct {
	ptel.Tracing
	list attribute.KeyValue
	// actionName and batchName are the spans' names, made once.
	actionName, batchName string
}

func newTracing(tp trace.TracerProvider, list string) tracing {
	return tracing{
		Tracing:    ptel.NewTracing(tp, scope),
		list:       attribute.String(attrList, list),
		actionName: "todolist.action " + list,
		batchName:  "todolist.batch " + list,
	}
}

// startAction starts the span of the action on it at start, if spans may
// record: it returns ctx with the span, or ctx and nil.
func (tr *tracing) startAction(ctx context.Context, it Item, start time.Time) (context.Context, trace.Span) {
	if !tr.On() {
		return ctx, nil
	}
	return tr.Start(ctx, tr.actionName, start, tr.list,
		attribute.String(attrItemID, it.ID),
		attribute.String(attrItemDue, timefmt.Format(it.Due)),
		attribute.Float64(attrLateness, start.Sub(it.Due).Seconds()),
		attribute.Int(attrAttempts, it.Attempts))
}

// endAction ends the span of an action that returned err at end.
func endAction(span trace.Span, err error, end time.Time) {
	switch {
	case err == nil:
	case isConflict(err):
		span.SetAttributes(attribute.Bool(attrConflict, true))
	default:
		ptel.Fail(span, err, end)
	}
	span.End(trace.WithTimestamp(end))
}

// startBatch starts the span of a batch action on batch, earliest due
// first, at start, if spans may record.
func (tr *tracing) startBatch(ctx context.Context, batch []claimed, start time.Time) (context.Context, trace.Span) {
	if !tr.On() || len(batch) == 0 {
		return ctx, nil
	}
	first := batch[0].Due
	return tr.Start(ctx, tr.batchName, start, tr.list,
		attribute.Int(attrBatchSize, len(batch)),
		attribute.String(attrItemDue, timefmt.Format(first)),
		attribute.Float64(attrLateness, start.Sub(first).Seconds()))
}

// endBatch ends the span of a batch action whose outcomes are given, at
// end; whole reports that the action failed as a whole.
func endBatch(span trace.Span, batch []claimed, outcomes []error, whole bool, end time.Time) {
	if whole {
		endAction(span, outcomes[0], end)
		return
	}
	failed, conflicts := 0, 0
	for i, err := range outcomes {
		switch {
		case err == nil:
		case isConflict(err):
			conflicts++
		default:
			failed++
			span.RecordError(err, trace.WithTimestamp(end), trace.WithAttributes(attribute.String(attrItemID, batch[i].ID)))
		}
	}
	span.SetAttributes(attribute.Int(attrFailed, failed), attribute.Int(attrConflicts, conflicts))
	if failed > 0 {
		span.SetStatus(codes.Error, fmt.Sprintf("%d of %d items failed", failed, len(batch)))
	}
	span.End(trace.WithTimestamp(end))
}
