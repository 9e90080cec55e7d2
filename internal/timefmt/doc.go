// Package timefmt prints instants losslessly and reads them back: RFC 3339
// with nanoseconds when needed, and the offset's seconds when it has any.
// RFC 3339 offsets have minutes only, so time.RFC3339 prints local mean
// time such as Africa/Monrovia's -00:44:30 (until 1972) as -00:44 and the
// printed text names another instant; these layouts add the seconds of the
// offset, as ISO 8601 allows, whenever the offset has any. Every package
// of passage prints instants this way (events' JSON, errors, log lines,
// the command line and the dashboard).
package timefmt
