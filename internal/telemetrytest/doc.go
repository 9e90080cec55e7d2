// Package telemetrytest is what the tests of tick, todolist, schedule
// and orchestration share to read back what those packages record
// through the OpenTelemetry API: a meter provider read by hand with the
// SDK's ManualReader and one collection of its figures, by instrument
// name and by the value of their one attribute ([MeterReader], [Collect],
// [Collected]); a tracer provider whose ended spans an in-memory
// exporter keeps ([SpanRecorder]); and the providers with which their
// telemetry must cost no allocation ([WithoutAnSDK]).
//
// It exists so that each package's tests do not carry a copy of these
// (issue 28 forbids near-copies): what a test expects of its own figures
// stays in the test.
package telemetrytest
