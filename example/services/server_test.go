package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/natsjs"
)

// natsServerBin is Debian's nats-server, as on CI.
const natsServerBin = "/usr/sbin/nats-server"

// startServer starts a nats-server with JetStream of the test's own, on
// a free port with its store in a temporary directory, killed when the
// test ends: a stream on passage.> on the shared server would take the
// subjects every other test uses.
func startServer(t *testing.T) string {
	t.Helper()
	if os.Getenv("PASSAGE_TEST_NATS") == "" {
		t.Skip("PASSAGE_TEST_NATS is not set") // the NATS tests go together
	}
	if _, err := os.Stat(natsServerBin); err != nil {
		t.Skipf("no %s: %v", natsServerBin, err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	cmd := exec.Command(natsServerBin, "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-js", "-sd", t.TempDir())
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			_ = conn.Close()
			break
		}
		require.True(t, time.Now().Before(deadline), "nats-server on port %d did not answer within 10 s: %v", port, err)
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Sprintf("nats://127.0.0.1:%d", port)
}

// On a server where "ticker run --nats" ran with its defaults — its
// stream PASSAGE on passage.> — the demo runs, its subjects outside
// passage.>; a time service told to use a prefix under it is refused with
// an error that names PASSAGE, its subjects and the flag to change.
func TestTheDemoRunsBesideTheBinarysDefaultStream(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "PASSAGE", Subjects: []string{"passage.>"}})
	require.NoError(t, err)

	var out bytes.Buffer
	err = run(ctx, []string{"-nats", url, "-minute", "200ms", "-timeout", "3m", "-report", "1m"}, &out)
	require.NoError(t, err, "output:\n%s", out.String())
	require.Contains(t, out.String(), "[orders] done: 1 paid and completed, 1 cancelled by timeout, 0 pending")

	out.Reset()
	err = run(ctx, []string{"time", "-nats", url, "-prefix", "passage.time", "-minute", "200ms"}, &out)
	require.ErrorIs(t, err, natsjs.ErrSubjectsOverlap)
	require.ErrorContains(t, err, "cannot create stream PASSAGE_TIME for passage.time.> on "+url+": its subjects overlap stream PASSAGE's passage.>; choose another prefix (the prefix option or flag)")
	require.ErrorContains(t, err, "or name stream PASSAGE (the stream option or flag)")

	// The launcher deleted its streams; the time service created none.
	names := js.StreamNames(ctx)
	var left []string
	for n := range names.Name() {
		left = append(left, n)
	}
	require.NoError(t, names.Err())
	require.Equal(t, []string{"PASSAGE"}, left)
}
