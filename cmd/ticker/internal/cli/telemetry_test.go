package cli

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
)

// collector is an OTLP/HTTP endpoint that keeps what it is sent.
type collector struct {
	mu     sync.Mutex
	paths  []string
	bodies [][]byte
}

func startCollector(t *testing.T) (*collector, string) {
	t.Helper()
	c := &collector{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.paths = append(c.paths, r.Method+" "+r.URL.Path)
		c.bodies = append(c.bodies, body)
		c.mu.Unlock()
		// No idle connection outlives the test (goleak).
		w.Header().Set("Connection", "close")
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(srv.Close)
	return c, srv.URL
}

func (c *collector) received() ([]string, [][]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.paths...), append([][]byte(nil), c.bodies...)
}

// With OTEL_EXPORTER_OTLP_ENDPOINT set, the command installs a tracer
// provider exporting over OTLP/HTTP to <endpoint>/v1/traces, as the
// standard says, and its shutdown flushes what is batched. No library
// makes spans yet: the test ends one through the installed provider.
func TestTracesGoOverOTLPWhenTheEndpointIsSet(t *testing.T) {
	c, endpoint := startCollector(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_SERVICE_NAME", "")
	var log bytes.Buffer
	tel, err := startTelemetry(context.Background(), Env{Getenv: os.Getenv}, slog.New(slog.NewTextHandler(&log, nil)))
	require.NoError(t, err)
	require.NotNil(t, tel.tracers, "a tracer provider is installed")
	require.Same(t, tel.tracers, otel.GetTracerProvider(), "as the global one, for the libraries")

	_, span := otel.Tracer("test").Start(context.Background(), "probe-span")
	span.End()
	paths, _ := c.received()
	require.Empty(t, paths, "batched until the shutdown")
	require.NoError(t, tel.shutdown())
	require.Empty(t, log.String())

	paths, bodies := c.received()
	require.Equal(t, []string{"POST /v1/traces"}, paths)
	require.True(t, bytes.Contains(bodies[0], []byte("probe-span")), "the span was exported")
	require.True(t, bytes.Contains(bodies[0], []byte("ticker")), "under the service name ticker")
}

// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is the URL itself, not a base.
func TestTheTracesEndpointIsUsedAsIs(t *testing.T) {
	c, endpoint := startCollector(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", endpoint+"/custom/traces")
	tel, err := startTelemetry(context.Background(), Env{Getenv: os.Getenv}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NotNil(t, tel.tracers)
	_, span := tel.tracers.Tracer("test").Start(context.Background(), "probe-span")
	span.End()
	require.NoError(t, tel.shutdown())
	paths, _ := c.received()
	require.Equal(t, []string{"POST /custom/traces"}, paths)
}

// Without the variables no tracer provider is installed: the global one
// stays what it was.
func TestNoTracerProviderWithoutAnEndpoint(t *testing.T) {
	t.Parallel()
	before := otel.GetTracerProvider()
	tel, err := startTelemetry(context.Background(), Env{Getenv: func(string) string { return "" }}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.Nil(t, tel.tracers)
	require.Equal(t, before, otel.GetTracerProvider())
	require.NoError(t, tel.shutdown())
}

// "ticker run" with a collector named sets the exporter up and shuts it
// down at exit without a complaint.
func TestRunWithACollectorStopsCleanly(t *testing.T) {
	_, endpoint := startCollector(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	before := otel.GetTracerProvider()
	var stdout, stderr bytes.Buffer
	clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 21, 12, 0, 30, 0, time.UTC))
	code := Main(context.Background(), []string{"run", "--once", "--db", filepath.Join(t.TempDir(), "passage.db")},
		Env{Stdout: &stdout, Stderr: &stderr, Clock: clock, Getenv: os.Getenv})
	require.Equal(t, ExitOK, code, stderr.String())
	require.False(t, strings.Contains(stderr.String(), "telemetry"), stderr.String())
	require.NotEqual(t, before, otel.GetTracerProvider(), "the run installed a tracer provider")
}
