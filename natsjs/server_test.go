package natsjs_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/natsjs"
)

// natsEnv holds the URL of the NATS server (JetStream on) the tests use;
// without it they are skipped. .ci/run sets it.
const natsEnv = "PASSAGE_TEST_NATS"

// serverURL returns the shared test server's URL, or skips the test.
func serverURL(t testing.TB) string {
	t.Helper()
	url := os.Getenv(natsEnv)
	if url == "" {
		t.Skip(natsEnv + " is not set")
	}
	return url
}

// connect opens a connection to url and its JetStream context, both
// closed with the test.
func connect(t testing.TB, url string, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	opts = append([]nats.Option{nats.Name(t.Name())}, opts...)
	nc, err := nats.Connect(url, opts...)
	require.NoError(t, err, "connect to %s", url)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return nc, js
}

// names is what one test's objects are called on the shared server:
// unique, so parallel tests and reruns never see each other's streams.
type names struct {
	stream, prefix string
}

func unique(t testing.TB) names {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	return names{stream: "PASSAGE_TEST_" + strings.ToUpper(id), prefix: "passagetest." + id + ".time"}
}

// ensure creates a test's stream and deletes it when the test ends.
func ensure(t testing.TB, js jetstream.JetStream, n names, opts ...natsjs.StreamOption) jetstream.Stream {
	t.Helper()
	s, err := natsjs.EnsureStream(context.Background(), js, n.stream, n.prefix, opts...)
	require.NoError(t, err)
	deleteWithTest(t, js, n.stream)
	return s
}

// deleteWithTest deletes stream when the test ends, on a connection of its
// own: the test may have closed its own.
func deleteWithTest(t testing.TB, js jetstream.JetStream, stream string) {
	url := js.Conn().ConnectedUrl()
	t.Cleanup(func() {
		nc, err := nats.Connect(url)
		if err != nil {
			t.Errorf("delete stream %s: %v (it stays on the NATS server)", stream, err)
			return
		}
		defer nc.Close()
		js, _ := jetstream.New(nc)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := js.DeleteStream(ctx, stream); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Errorf("delete stream %s: %v (it stays on the NATS server)", stream, err)
		}
	})
}

// freePort returns a TCP port nothing listens on (as of now).
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

// child is a nats-server of a test's own, a child process it can kill and
// start again on the same port and store directory.
type child struct {
	t    testing.TB
	port int
	dir  string
	cmd  *exec.Cmd
	// noJetStream starts it without -js.
	noJetStream bool
}

// nats-server is Debian's package, as on CI (.ci/run installs it).
const natsServerBin = "/usr/sbin/nats-server"

// startChild starts a nats-server with JetStream on a free port, killed
// when the test ends.
func startChild(t testing.TB) *child {
	t.Helper()
	return runChild(t, &child{})
}

// startChildWithoutJetStream starts a nats-server without -js on a free
// port, killed when the test ends.
func startChildWithoutJetStream(t testing.TB) *child {
	t.Helper()
	return runChild(t, &child{noJetStream: true})
}

func runChild(t testing.TB, c *child) *child {
	t.Helper()
	serverURL(t) // the shared server's tests and these go together
	if _, err := os.Stat(natsServerBin); err != nil {
		t.Skipf("no %s: %v", natsServerBin, err)
	}
	c.t, c.port, c.dir = t, freePort(t), t.TempDir()
	c.start()
	t.Cleanup(c.kill)
	return c
}

func (c *child) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", c.port) }

// start runs the server and waits until it takes connections.
func (c *child) start() {
	c.t.Helper()
	args := []string{"-a", "127.0.0.1", "-p", fmt.Sprint(c.port)}
	if !c.noJetStream {
		args = append(args, "-js", "-sd", c.dir)
	}
	c.cmd = exec.Command(natsServerBin, args...)
	require.NoError(c.t, c.cmd.Start())
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", c.port), time.Second)
		if err == nil {
			_ = conn.Close()
			return
		}
		if time.Now().After(deadline) {
			c.kill()
			c.t.Fatalf("nats-server on port %d did not answer within 10 s: %v", c.port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill ends the server at once, as kill -9 does, and waits for it.
func (c *child) kill() {
	if c.cmd == nil {
		return
	}
	_ = c.cmd.Process.Kill()
	_ = c.cmd.Wait()
	c.cmd = nil
}
