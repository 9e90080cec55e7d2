package cli_test

import (
	"context"
	"os"

	"github.com/passage-of-time/passage/cmd/ticker/internal/cli"
)

// Main runs a command line as the ticker binary would, writing to the
// given writers: here, the spring-forward day in Warsaw is an hour short.
func ExampleMain() {
	cli.Main(context.Background(),
		[]string{"preview", "--unit", "day", "--tz", "Europe/Warsaw", "--from", "2026-03-28", "-n", "2"},
		cli.Env{Stdout: os.Stdout, Stderr: os.Stderr})
	// Output:
	// Next 2 day boundaries in Europe/Warsaw after 2026-03-28T00:00:00+01:00:
	// BOUNDARY                   WEEKDAY  LENGTH   NOTE
	// 2026-03-29T00:00:00+01:00  Sun      23h0m0s  UTC offset changes +01:00 → +02:00
	// 2026-03-30T00:00:00+02:00  Mon      24h0m0s
}
