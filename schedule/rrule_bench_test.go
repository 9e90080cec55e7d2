package schedule_test

import (
	"testing"
	"time"

	"github.com/passage-of-time/passage/schedule"
)

// BenchmarkRRuleNextOldDTStart times Next for rules whose DTSTART is
// years before the instant asked about: the expansion must not walk every
// occurrence since DTSTART.
//
//	go test -run '^$' -bench RRuleNextOldDTStart -benchtime 20x ./schedule
func BenchmarkRRuleNextOldDTStart(b *testing.B) {
	at := time.Date(2026, 5, 1, 12, 0, 30, 0, time.UTC)
	for _, c := range []struct{ name, text string }{
		{"minutely-2020-warsaw", "DTSTART;TZID=Europe/Warsaw:20200101T000000\nRRULE:FREQ=MINUTELY;INTERVAL=5"},
		{"secondly-2025-utc", "DTSTART:20250101T000000Z\nRRULE:FREQ=SECONDLY;INTERVAL=10;BYHOUR=9,17"},
		{"hourly-2000-newyork", "DTSTART;TZID=America/New_York:20000101T000000\nRRULE:FREQ=HOURLY;BYDAY=MO,TU,WE,TH,FR"},
		{"daily-1990-warsaw", "DTSTART;TZID=Europe/Warsaw:19900101T093000\nRRULE:FREQ=DAILY"},
		{"monthly-2000-utc", "DTSTART:20000115T093000Z\nRRULE:FREQ=MONTHLY;BYDAY=-1FR"},
	} {
		s, err := schedule.RRule(c.text, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				if s.Next(at).IsZero() {
					b.Fatal("no next slot")
				}
			}
		})
	}
}
