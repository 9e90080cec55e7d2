package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Telemetry of the commands that keep running ("ticker run", "ticker
// serve"). The libraries speak only the OpenTelemetry API; the SDK and
// the exporters are chosen here, in the binary, and installed as the
// global providers, so that what the libraries record reaches them.
// Metrics go to /metrics through the Prometheus exporter; traces go over
// OTLP/HTTP when one of the standard variables names where (see
// otlpEndpointEnv), and nowhere otherwise.

// otlpEndpointEnv are the standard variables naming a collector for
// traces: either installs the OTLP/HTTP exporter, which reads them — and
// the rest of OTEL_EXPORTER_OTLP_* (headers, timeout, certificates,
// compression) — itself.
var otlpEndpointEnv = []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"}

// telemetryShutdownTimeout bounds the flush at exit.
const telemetryShutdownTimeout = 5 * time.Second

// meterScope names the instruments the binary makes itself.
const meterScope = "github.com/passage-of-time/passage/cmd/ticker"

// telemetry is the command's providers, and what serves its metrics.
type telemetry struct {
	// registry is the exporter's own, not Prometheus's global one: each
	// command (each test) has its figures alone.
	registry *prometheus.Registry
	meters   *sdkmetric.MeterProvider
	// tracers is nil unless a collector is named: no tracer provider is
	// installed then, and spans cost nothing.
	tracers *sdktrace.TracerProvider
	logger  *slog.Logger
}

// startTelemetry sets up the providers and makes them the global ones.
// The resource names the service "ticker" unless OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES say otherwise. Errors the SDK reports outside
// a call (a collection that failed, an export refused) are logged.
func startTelemetry(ctx context.Context, env Env, logger *slog.Logger) (*telemetry, error) {
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "ticker")),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(), // last: the standard variables win
	)
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	registry := prometheus.NewRegistry()
	// Dots become underscores; counters get _total, the others their
	// unit (_seconds). Scope labels are left out: the series keep their
	// identity when the recording moves from the binary to the
	// libraries, whose instruments have scopes of their own.
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, fmt.Errorf("telemetry: prometheus exporter: %w", err)
	}
	t := &telemetry{
		registry: registry,
		meters:   sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter), sdkmetric.WithResource(res)),
		logger:   logger,
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		logger.Warn("telemetry", "err", err)
	}))
	otel.SetMeterProvider(t.meters)
	if tracesWanted(env) {
		exporter, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("telemetry: OTLP trace exporter: %w", err)
		}
		t.tracers = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
		otel.SetTracerProvider(t.tracers)
	}
	return t, nil
}

// tracesWanted reports whether a standard variable names a collector.
func tracesWanted(env Env) bool {
	for _, k := range otlpEndpointEnv {
		if env.getenv(k) != "" {
			return true
		}
	}
	return false
}

// meter is the binary's own meter.
func (t *telemetry) meter() metric.Meter { return t.meters.Meter(meterScope) }

// handler serves /metrics: the Prometheus text (or what the scraper
// asks for) of everything recorded through the meter provider. A
// collection that fails in part still answers with the rest.
func (t *telemetry) handler() http.Handler {
	return promhttp.HandlerFor(t.registry, promhttp.HandlerOpts{
		ErrorLog:      promLog{t.logger},
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// shutdown flushes and stops the providers, within telemetryShutdownTimeout.
func (t *telemetry) shutdown() error {
	ctx, cancel := context.WithTimeout(context.Background(), telemetryShutdownTimeout)
	defer cancel()
	var errs []error
	if t.tracers != nil {
		// Exports the spans still batched.
		if err := t.tracers.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("telemetry: stop the tracer provider: %w", err))
		}
	}
	if err := t.meters.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("telemetry: stop the meter provider: %w", err))
	}
	return errors.Join(errs...)
}

// close is shutdown for a deferred call: a failed flush is logged, and
// does not fail the command whose work is done.
func (t *telemetry) close() {
	if err := t.shutdown(); err != nil {
		t.logger.Warn("telemetry not flushed", "err", err)
	}
}

// promLog is promhttp's error log on the command's logger.
type promLog struct{ logger *slog.Logger }

func (l promLog) Println(v ...any) { l.logger.Warn("/metrics: " + fmt.Sprint(v...)) }
