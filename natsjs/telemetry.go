package natsjs

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	ptel "github.com/passage-of-time/passage/internal/telemetry"
)

// scope is the instrumentation scope of the package's meters.
const scope = "github.com/passage-of-time/passage/natsjs"

// metricPoison is the counter of messages a Consumer terminated (see
// WithMeterProvider).
const metricPoison = "passage.natsjs.consumer.poison"

// consumerTelemetry is what a Consumer records with, made once in
// NewConsumer: an attribute set per reason, so that recording allocates
// nothing.
type consumerTelemetry struct {
	poisoned metric.Int64Counter
	reasons  [len(reasonOrder)]ptel.Attributes
}

// reasonOrder is PoisonReasons() as an array, whose length sizes the
// per-reason tables.
var reasonOrder = [...]PoisonReason{PoisonSubject, PoisonUnknownUnit, PoisonTooLarge, PoisonMalformed, PoisonMissingField, PoisonNotABoundary, PoisonInconsistent, PoisonMessageID}

// reasonIndex is reason's place in reasonOrder.
func reasonIndex(reason PoisonReason) int {
	for i, r := range reasonOrder {
		if r == reason {
			return i
		}
	}
	panic(fmt.Sprintf("natsjs: unknown poison reason %q", reason))
}

// newConsumerTelemetry makes durable's instruments with mp (nil: the
// global provider) and records each reason at zero, so that its series
// exist before the first poison. An instrument the provider refuses is
// reported to the global error handler and replaced by a no-op one.
func newConsumerTelemetry(mp metric.MeterProvider, durable string) consumerTelemetry {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	in := ptel.NewInstruments(mp, scope)
	tel := consumerTelemetry{
		poisoned: in.Counter(metricPoison, "{message}", "Messages a consumer terminated because they were not the event their subject names, by reason."),
	}
	if err := in.Err(); err != nil {
		otel.Handle(fmt.Errorf("natsjs: metrics: %w", err))
	}
	for i, r := range reasonOrder {
		tel.reasons[i] = ptel.NewAttributes(attribute.String("consumer", durable), attribute.String("reason", string(r)))
		tel.poisoned.Add(context.Background(), 0, tel.reasons[i].Add...)
	}
	return tel
}

// poison records a message terminated for reason.
func (tel *consumerTelemetry) poison(ctx context.Context, reason PoisonReason) {
	tel.poisoned.Add(ctx, 1, tel.reasons[reasonIndex(reason)].Add...)
}
