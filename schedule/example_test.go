package schedule_test

import (
	"fmt"
	"time"

	"github.com/passage-of-time/passage/schedule"
)

func print3(s schedule.Spec, from time.Time) {
	for at, i := s.Next(from), 0; !at.IsZero() && i < 3; at, i = s.Next(at), i+1 {
		fmt.Println(at.Format("Mon 2006-01-02 15:04 -07:00"))
	}
}

// Every 8 hours is 8 hours of absolute time, also across a DST change.
func ExampleEvery() {
	warsaw, _ := time.LoadLocation("Europe/Warsaw")
	s, err := schedule.Every(8*time.Hour, time.Date(2026, 3, 28, 20, 0, 0, 0, warsaw))
	if err != nil {
		panic(err)
	}
	print3(s, time.Date(2026, 3, 28, 20, 0, 0, 0, warsaw))
	// Output:
	// Sun 2026-03-29 05:00 +02:00
	// Sun 2026-03-29 13:00 +02:00
	// Sun 2026-03-29 21:00 +02:00
}

// Fridays at noon in Warsaw.
func ExampleCron() {
	warsaw, _ := time.LoadLocation("Europe/Warsaw")
	s, err := schedule.Cron("0 12 * * FRI", warsaw)
	if err != nil {
		panic(err)
	}
	print3(s, time.Date(2026, 3, 20, 0, 0, 0, 0, warsaw))
	// Output:
	// Fri 2026-03-20 12:00 +01:00
	// Fri 2026-03-27 12:00 +01:00
	// Fri 2026-04-03 12:00 +02:00
}

// The second Tuesday of every month at 09:30, as an iCalendar rule.
func ExampleRRule() {
	s, err := schedule.RRule("DTSTART;TZID=America/New_York:20260101T093000\nRRULE:FREQ=MONTHLY;BYDAY=2TU;COUNT=2", nil)
	if err != nil {
		panic(err)
	}
	print3(s, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	// Output:
	// Tue 2026-01-13 09:30 -05:00
	// Tue 2026-02-10 09:30 -05:00
}

// Every 3 months on the 31st, on the month's last day when it is shorter.
func ExampleCalendar() {
	warsaw, _ := time.LoadLocation("Europe/Warsaw")
	s, err := schedule.Calendar{
		Every:       schedule.Monthly,
		Interval:    3,
		Start:       time.Date(2026, 1, 1, 0, 0, 0, 0, warsaw),
		MonthDays:   []int{31},
		ShortMonths: schedule.LastDayOfShortMonths,
		At:          []schedule.Clock{schedule.At(9, 30)},
	}.Spec()
	if err != nil {
		panic(err)
	}
	print3(s, time.Date(2026, 1, 1, 0, 0, 0, 0, warsaw))
	// Output:
	// Sat 2026-01-31 09:30 +01:00
	// Thu 2026-04-30 09:30 +02:00
	// Fri 2026-07-31 09:30 +02:00
}

// Easter Monday at 10:00, Western and Orthodox.
func ExampleEaster() {
	for _, church := range []schedule.Church{schedule.Western, schedule.Orthodox} {
		s, err := schedule.Easter(church, 1, schedule.At(10, 0), time.UTC)
		if err != nil {
			panic(err)
		}
		fmt.Println(church, s.Next(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)).Format(time.DateOnly))
	}
	// Output:
	// western 2027-03-29
	// orthodox 2027-05-03
}

// Weekdays at 09:00 except public holidays: a list of dates and Easter
// Monday.
func ExampleExcept() {
	warsaw, _ := time.LoadLocation("Europe/Warsaw")
	weekdays, _ := schedule.Cron("0 9 * * MON-FRI", warsaw)
	holidays, _ := schedule.Dates(warsaw, schedule.Date{Year: 2026, Month: time.December, Day: 24}, schedule.Date{Year: 2026, Month: time.December, Day: 25})
	easterMonday, _ := schedule.Easter(schedule.Western, 1, schedule.Clock{}, warsaw)
	print3(schedule.Except(weekdays, warsaw, holidays, easterMonday), time.Date(2026, 12, 23, 0, 0, 0, 0, warsaw))
	// Output:
	// Wed 2026-12-23 09:00 +01:00
	// Mon 2026-12-28 09:00 +01:00
	// Tue 2026-12-29 09:00 +01:00
}

// The text forms the command line takes, from the night Warsaw moves its
// clocks forward (02:00 → 03:00).
func ExampleParse() {
	warsaw, _ := time.LoadLocation("Europe/Warsaw")
	from := time.Date(2026, 3, 29, 0, 0, 0, 0, warsaw)
	for _, text := range []string{
		"@every 8h", // from the Unix epoch: 00:00, 08:00, 16:00 UTC
		"@daily",
		"30 2 * * *", // in the gap: the first instant after it
		"DTSTART;TZID=Europe/Warsaw:20260301T023000\nRRULE:FREQ=DAILY", // in the gap: the offset before it
	} {
		s, err := schedule.Parse(text, warsaw)
		if err != nil {
			panic(err)
		}
		fmt.Println(s.Next(from).In(warsaw).Format(time.RFC3339))
	}
	// Output:
	// 2026-03-29T01:00:00+01:00
	// 2026-03-30T00:00:00+02:00
	// 2026-03-29T03:00:00+02:00
	// 2026-03-29T03:30:00+02:00
}
