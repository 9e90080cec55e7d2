package telemetrytest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// MeterReader returns a meter provider whose metrics the test reads back
// with Collect, shut down when the test ends.
func MeterReader(t testing.TB) (*sdkmetric.MeterProvider, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { require.NoError(t, mp.Shutdown(context.Background())) })
	return mp, reader
}

// Collected is one collection of an instrumentation scope's metrics, by
// instrument name.
type Collected map[string]metricdata.Metrics

// Collect collects reader's metrics of the instrumentation scope scope
// (a package's import path): another scope's, a to-do list's recorded
// with a scheduler's provider say, are left out.
func Collect(t testing.TB, reader *sdkmetric.ManualReader, scope string) Collected {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	out := Collected{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != scope {
			continue
		}
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// Scopes are the instrumentation scopes reader collects metrics of.
func Scopes(t testing.TB, reader *sdkmetric.ManualReader) map[string]bool {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	out := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		out[sm.Scope.Name] = true
	}
	return out
}

// ValueOf is the value of a data point's one attribute, key, or "" for
// a data point without attributes; any other attribute fails the test —
// the packages' metrics carry a bounded name, never an id.
func ValueOf(t testing.TB, attrs attribute.Set, key string) string {
	t.Helper()
	if attrs.Len() == 0 {
		return ""
	}
	require.Equal(t, 1, attrs.Len(), "one attribute: %v", attrs.ToSlice())
	v, ok := attrs.Value(attribute.Key(key))
	require.True(t, ok, "the attribute is %s: %v", key, attrs.ToSlice())
	return v.AsString()
}

// Counts are the counter name's series by the value of their one
// attribute, key ("" for none); none when name was never recorded. The
// test fails if name is not an int64 counter.
func (c Collected) Counts(t testing.TB, name, key string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	m, ok := c[name]
	if !ok {
		return out
	}
	data := m.Data
	sum, ok := data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is a %T, want an int64 sum", name, data)
	require.True(t, sum.IsMonotonic, "%s is a counter", name)
	for _, dp := range sum.DataPoints {
		out[ValueOf(t, dp.Attributes, key)] += dp.Value
	}
	return out
}

// Gauges are the int64 gauge name's series by the value of their one
// attribute, key ("" for none); none when name was never recorded.
func (c Collected) Gauges(t testing.TB, name, key string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	m, ok := c[name]
	if !ok {
		return out
	}
	data := m.Data
	g, ok := data.(metricdata.Gauge[int64])
	require.True(t, ok, "%s is a %T, want an int64 gauge", name, data)
	for _, dp := range g.DataPoints {
		out[ValueOf(t, dp.Attributes, key)] = dp.Value
	}
	return out
}

// Histograms are the float64 histogram name's series by the value of
// their one attribute, key ("" for none); none when name was never
// recorded.
func (c Collected) Histograms(t testing.TB, name, key string) map[string]metricdata.HistogramDataPoint[float64] {
	t.Helper()
	out := map[string]metricdata.HistogramDataPoint[float64]{}
	m, ok := c[name]
	if !ok {
		return out
	}
	data := m.Data
	h, ok := data.(metricdata.Histogram[float64])
	require.True(t, ok, "%s is a %T, want a float64 histogram", name, data)
	for _, dp := range h.DataPoints {
		out[ValueOf(t, dp.Attributes, key)] = dp
	}
	return out
}
