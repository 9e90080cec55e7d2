package schedule

import "errors"

// ErrInvalidSpec is returned for a spec that cannot be built; the message
// names the part that is wrong (a cron field, an RRULE property, an option
// and its value).
var ErrInvalidSpec = errors.New("schedule: invalid spec")
