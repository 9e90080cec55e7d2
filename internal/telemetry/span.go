package telemetry

import (
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Fail records err on span at at and sets its status to Error.
func Fail(span trace.Span, err error, at time.Time) {
	span.RecordError(err, trace.WithTimestamp(at))
	span.SetStatus(codes.Error, err.Error())
}

// End ends span at at, failed with err when err is not nil. A nil span
// (none was started) is left alone.
func End(span trace.Span, err error, at time.Time) {
	if span == nil {
		return
	}
	if err != nil {
		Fail(span, err, at)
	}
	span.End(trace.WithTimestamp(at))
}
