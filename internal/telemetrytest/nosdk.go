package telemetrytest

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// Providers are a meter and a tracer provider to give a package.
type Providers struct {
	Meters  metric.MeterProvider
	Tracers trace.TracerProvider
}

// WithoutAnSDK are the providers with which recording and tracing must
// cost no allocation and start no span, by name: "global", the API's
// global ones — what the packages read by default — which a test binary
// must then never install an SDK in, and "no-op", the API's no-op ones.
func WithoutAnSDK() map[string]Providers {
	return map[string]Providers{
		"global": {Meters: otel.GetMeterProvider(), Tracers: otel.GetTracerProvider()},
		"no-op":  {Meters: metricnoop.NewMeterProvider(), Tracers: tracenoop.NewTracerProvider()},
	}
}
