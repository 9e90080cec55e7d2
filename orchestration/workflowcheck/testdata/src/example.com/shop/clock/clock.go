// Package clock is the second package away from the workflows in shop.
package clock

import "time"

// Read reads the clock.
func Read() time.Time { return time.Now() } // want Read:`^time.Now: the clock reads differently on replay; use ctx.Now\(\)$`
