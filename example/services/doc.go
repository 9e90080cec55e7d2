// Command services runs the ordering example as two services on NATS
// JetStream: a time service, the one process that decides when a minute
// has passed and stores it on a stream (with the runs of its schedules on
// another), and an order service that runs no ticker and cancels unpaid
// orders on the minutes it reads from that stream.
//
//	go run ./example/services [-nats URL] [-minute 1s] [-timeout 3m] [-report 2m]
//
// starts both as child processes of its own against the NATS server
// (JetStream on), on streams of their own that it deletes at the end:
// the order service places two orders, alice pays hers, bob does not;
// the time service's orders-report schedule has the order service report
// what is pending, once per run; and once bob's deadline has passed on
// the time service's clock his order is cancelled and the demo ends. -minute is how long a minute
// lasts: 1s by default (a simulated clock, the demo takes seconds), 1m
// for real time.
//
// Each service also runs alone, as it would be deployed:
//
//	go run ./example/services time [flags]     # see package timesvc
//	go run ./example/services orders [flags]   # see package ordersvc
package main
