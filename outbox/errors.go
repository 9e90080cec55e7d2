package outbox

import "errors"

var (
	// ErrInvalidArgument is returned for unusable input (an empty key or
	// stream, a nil transaction), naming it.
	ErrInvalidArgument = errors.New("outbox: invalid argument")
	// ErrInvalidOption is returned by Open and NewRelay for an unusable
	// option, naming it.
	ErrInvalidOption = errors.New("outbox: invalid option")
)
