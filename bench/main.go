// Command bench runs passage side by side with its peers on the same work,
// in one run on one machine, and prints a markdown table of throughputs and
// ratios: to-do list timeouts against River, gocron/v2 and a time.AfterFunc
// floor; the bus against Watermill's GoChannel, asaskevich/EventBus and a
// plain function call; orchestration against go-workflows.
//
//	cd bench && go run .            # or: make bench-peers
//	go run . -h                     # the sizes and the PostgreSQL DSN
//
// It is a module of its own so that the peers never become dependencies of
// the library. PostgreSQL rows need a server (-postgres, or
// PASSAGE_TEST_POSTGRES); each run works in fresh schemas, dropped at the end,
// and the rows are skipped with a note when the server does not answer.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"time"
)

type config struct {
	postgres     string
	timeouts     int
	events       int
	async        int
	workflows    int
	only         string
	riverPoll    time.Duration
	riverCool    time.Duration
	riverWork    int
	riverDefault int
	gocronLead   time.Duration
}

func main() {
	var cfg config
	dsn := os.Getenv("PASSAGE_TEST_POSTGRES")
	if dsn == "" {
		dsn = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	flag.StringVar(&cfg.postgres, "postgres", dsn, "PostgreSQL DSN (\"\" or \"off\" skips the PostgreSQL rows)")
	flag.IntVar(&cfg.timeouts, "timeouts", 100_000, "timeouts scenario: orders due at once")
	flag.IntVar(&cfg.events, "events", 1_000_000, "bus scenario: events published synchronously")
	flag.IntVar(&cfg.async, "async-events", 200_000, "bus scenario: events published to asynchronous handlers")
	flag.IntVar(&cfg.workflows, "workflows", 500, "workflows scenario: instances")
	flag.StringVar(&cfg.only, "only", "", "comma-separated scenarios to run (timeouts, bus, workflows); empty runs all")
	flag.DurationVar(&cfg.riverPoll, "river-poll", 10*time.Millisecond, "River tuned: FetchPollInterval")
	flag.DurationVar(&cfg.riverCool, "river-cooldown", time.Millisecond, "River tuned: FetchCooldown")
	flag.IntVar(&cfg.riverDefault, "river-default-timeouts", 20_000, "timeouts scenario: orders for River with default polling (about 1,000 jobs/s: MaxWorkers per 100 ms cooldown)")
	flag.IntVar(&cfg.riverWork, "river-workers", 100, "River: MaxWorkers of the queue (both runs)")
	flag.DurationVar(&cfg.gocronLead, "lead", 3*time.Second, "gocron and time.AfterFunc: the due instant is this long after adding starts")
	flag.Parse()
	if cfg.postgres == "off" {
		cfg.postgres = ""
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg config, out io.Writer) error {
	pg, note := openPostgres(ctx, cfg.postgres)
	if pg != nil {
		defer pg.Close()
	}
	want := func(name string) bool {
		return cfg.only == "" || strings.Contains(","+cfg.only+",", ","+name+",")
	}
	var t table
	if note != "" {
		t.notes = append(t.notes, note)
	}
	start := time.Now()
	if want("timeouts") {
		if err := timeouts(ctx, cfg, pg, &t); err != nil {
			return fmt.Errorf("timeouts: %w", err)
		}
	}
	if want("bus") {
		if err := busScenario(ctx, cfg, &t); err != nil {
			return fmt.Errorf("bus: %w", err)
		}
	}
	if want("workflows") {
		if err := workflows(ctx, cfg, pg, &t); err != nil {
			return fmt.Errorf("workflows: %w", err)
		}
	}
	fmt.Fprintf(out, "Machine: %d cores (nproc), %s, %s/%s, %s; PostgreSQL: %s. Date: %s. Whole run: %s.\n\n",
		runtime.NumCPU(), cpuModel(), runtime.GOOS, runtime.GOARCH, runtime.Version(), pg.version(),
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), time.Since(start).Round(time.Second))
	t.write(out)
	return nil
}

// cpuModel reads the CPU's model name from /proc/cpuinfo.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}
