// Package tick publishes the passage of time as domain events.
package tick
