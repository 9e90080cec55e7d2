// Command quickstart is the smallest complete use of passage as a library,
// the program the README's "use it as a library" section shows: a bus, a
// durable ticker, and a to-do list of unpaid orders that is projected from
// events and worked every minute.
//
//	go run ./example/quickstart
//
// It places one order due in a minute and prints the cancellation when the
// next minute boundary after the deadline passes (about two minutes on the
// real clock). Ctrl-C stops it gracefully.
package main
