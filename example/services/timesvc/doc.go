// Package timesvc is the time service of the two-service example: the one
// process that decides when a minute has passed, and stores each minute
// and hour on a NATS JetStream stream for every other service to read,
// and the runs of its schedules on another.
//
// It runs a tick.Ticker whose publisher is a natsjs.Publisher, so a
// boundary is stored on the stream, under its identity as Nats-Msg-Id,
// before the ticker's cursor moves past it: a replica that takes the
// lease over and emits it again is de-duplicated by the server. Each
// minute stored also fires the slots of its schedule.Scheduler that fell
// due (one, orders-report, every -report); a run is written to the
// outbox in its firing's transaction and published by an outbox relay
// after the commit, under its slot id as Nats-Msg-Id. With
// -minute shorter than a minute its clock is simulated, starting at
// -start and advancing one minute each -minute of real time, so that the
// demo ends in seconds.
//
// Run it with `go run ./example/services time [flags]` (see Run); the
// launcher, `go run ./example/services`, starts it beside the order
// service.
package timesvc
