// Package cli is the ticker command: each subcommand parses its flags, wires
// the library together and writes to the io.Writers it is given, so tests
// drive it exactly as a user does, with a fake clock in place of the real one.
package cli
