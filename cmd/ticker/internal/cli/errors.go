package cli

import "fmt"

// usageError marks errors in the command line, which exit with ExitUsage.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// interruptedError is a command stopped by a signal before its work was
// done; its message says where it stopped. It exits ExitInterrupted.
type interruptedError struct{ msg string }

func (e interruptedError) Error() string { return e.msg }

// rootError is an error of the command line as a whole (an unknown
// command), printed after "ticker:" alone; it exits ExitUsage.
type rootError struct{ msg string }

func (e rootError) Error() string { return e.msg }

// errUsageShown is returned when the help was printed in place of a
// command that needs one ("ticker" alone): exit ExitUsage, nothing more
// on stderr.
var errUsageShown = usageError{fmt.Errorf("no command given")}
