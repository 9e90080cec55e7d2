// Package zone answers the questions about a *time.Location that calendar
// arithmetic needs and the standard library answers wrongly or not at all:
// over which instants an offset holds (Segment: time.Time.ZoneBounds can
// report an end behind the instant), and at which instants a local wall
// time occurs (Resolve: none in a spring-forward gap, two in a fall-back).
package zone
