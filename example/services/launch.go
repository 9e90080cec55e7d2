package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// launch starts the order service, then the time service, as child
// processes running this same program, on a stream of their own; it
// stops the time service once the order service is done, and deletes the
// stream.
func launch(ctx context.Context, args []string, stdout io.Writer) (err error) {
	flags := flag.NewFlagSet("services", flag.ContinueOnError)
	flags.SetOutput(stdout)
	url := flags.String("nats", nats.DefaultURL, "the NATS server (JetStream on)")
	minute := flags.Duration("minute", time.Second, "how long a minute lasts: 1m is real time, less a simulated clock")
	timeout := flags.Duration("timeout", 3*time.Minute, "how long a client has to pay")
	report := flags.Duration("report", 2*time.Minute, "how often the time service's orders-report schedule runs")
	ordersDB := flags.String("orders-db", "", "the order service's database (default: a temporary SQLite file)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if flags.NArg() > 0 {
		return fmt.Errorf("unexpected %q: want time, orders, or the launcher's flags", flags.Arg(0))
	}
	if *report <= 0 || *report > *timeout {
		// The order service ends once nothing is pending and a report
		// was made: the first must come by the deadline.
		return fmt.Errorf("-report %v: must be positive and at most -timeout %v", *report, *timeout)
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this program to start the services: %w", err)
	}

	// A stream and subjects of this run's own: a run started again
	// within the duplicate window would otherwise find its minutes taken
	// for duplicates of the last one's. Outside passage.>, the subjects
	// of the ticker binary's default stream PASSAGE: a server where
	// "ticker run --nats" ran with its defaults refuses any other stream
	// under passage.> ("subjects overlap with an existing stream").
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	stream, prefix := "PASSAGE_DEMO_"+strings.ToUpper(id), "services."+id+".time"
	runsStream, runsPrefix := "PASSAGE_DEMO_RUNS_"+strings.ToUpper(id), "services."+id+".runs"
	nc, err := nats.Connect(*url, nats.Name("passage services launcher"))
	if err != nil {
		return fmt.Errorf("connect to %s: %w", *url, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	defer func() {
		// The streams were made by the time service; the launcher cleans
		// up.
		for _, s := range []string{stream, runsStream} {
			if err2 := js.DeleteStream(context.WithoutCancel(ctx), s); err2 != nil && !errors.Is(err2, jetstream.ErrStreamNotFound) {
				err = errors.Join(err, fmt.Errorf("delete stream %s: %w", s, err2))
			}
		}
	}()

	common := []string{"-nats", *url, "-prefix", prefix, "-runs-prefix", runsPrefix}
	timeArgs := append([]string{"time", "-stream", stream, "-runs-stream", runsStream, "-report", report.String(), "-minute", minute.String()}, common...)
	orderArgs := append([]string{"orders", "-timeout", timeout.String()}, common...)
	if *ordersDB != "" {
		orderArgs = append(orderArgs, "-db", *ordersDB)
	}
	simulated := *minute < time.Minute
	if simulated {
		start := time.Now().UTC().Truncate(time.Minute).Format(time.RFC3339)
		timeArgs = append(timeArgs, "-start", start)
		orderArgs = append(orderArgs, "-follow", "-start", start)
	}
	out := &lines{w: stdout}
	// Last: every line the children wrote is out before launch returns.
	defer out.copying.Wait()
	fmt.Fprintf(out, "services: on %s, a minute every %v: the time service publishes minutes to stream %s and schedule runs to %s; the order service reads both\n", *url, *minute, stream, runsStream)

	// The time service first: it creates the stream the order service
	// reads.
	timeSvc, timeReady, err := out.start(self, timeArgs, "[time]   ", "publishing")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stopChild(timeSvc, "time")) }()
	select {
	case <-timeReady:
	case <-ctx.Done():
		return nil
	}
	orderSvc, _, err := out.start(self, orderArgs, "[orders] ", "")
	if err != nil {
		return err
	}
	// Interrupted, the launcher passes it on to the order service (a
	// terminal's Ctrl-C reached it already) and waits for it.
	exited := make(chan struct{})
	defer close(exited)
	go func() {
		select {
		case <-ctx.Done():
			_ = orderSvc.Process.Signal(os.Interrupt)
		case <-exited:
		}
	}()
	if err := orderSvc.Wait(); err != nil {
		return fmt.Errorf("order service: %w", err)
	}
	if ctx.Err() == nil {
		fmt.Fprintln(out, "services: the order service is done; stopping the time service")
	}
	return nil
}

// stopChild interrupts a child and waits for it.
func stopChild(cmd *exec.Cmd, name string) error {
	if err := cmd.Process.Signal(os.Interrupt); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop the %s service: %w", name, err)
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("%s service: %w", name, err)
	}
	return nil
}

// lines writes whole lines from several children to w, one at a time.
type lines struct {
	mu sync.Mutex
	w  io.Writer
	// copying counts the children whose output is still being copied.
	copying sync.WaitGroup
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// start runs self with args, each line of its output written to l after
// prefix, and returns the command and a channel closed once a line holds
// ready (or the output ended).
func (l *lines) start(self string, args []string, prefix, ready string) (*exec.Cmd, <-chan struct{}, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(self, args...)
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Start()
	// The child holds the writing end now: the reader sees the end of
	// the output when the child is gone.
	_ = w.Close()
	if err != nil {
		_ = r.Close()
		return nil, nil, fmt.Errorf("start %s: %w", strings.TrimSpace(prefix), err)
	}
	readyC := make(chan struct{})
	l.copying.Add(1)
	go func() {
		defer l.copying.Done()
		defer r.Close()
		seen := false
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			fmt.Fprintf(l, "%s%s\n", prefix, sc.Text())
			if !seen && strings.Contains(sc.Text(), ready) {
				seen = true
				close(readyC)
			}
		}
		if !seen {
			close(readyC)
		}
	}()
	return cmd, readyC, nil
}
