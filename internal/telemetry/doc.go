// Package telemetry is what tick, todolist, schedule and orchestration
// share to record their metrics and spans through the OpenTelemetry API:
// telling whether a tracer provider can record at all ([Tracing]), the
// span that begins a new trace linked to the one that caused it, the
// instruments made with a no-op stand-in for any the provider refuses
// ([Instruments]), an attribute set made once into the options every
// measurement takes ([Attributes]), and the lateness histogram's bucket
// bounds ([LatenessBuckets]).
//
// It exists so that these are written once: each package had grown its
// own copy of them (issue 28 forbids near-copies), and a fix to one —
// the day the API moves the type of its global placeholder, say — would
// have had to be made four times. What is each package's own (its
// instruments' names, its spans' names and attributes, its documented
// options) stays in the package.
//
// Everything here costs no allocation when nothing can record: with the
// API's no-op providers, or the global ones while no SDK is installed,
// so that the packages' hot paths stay allocation-free without an SDK.
package telemetry
