package main_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/tick"
)

// "ticker run --nats" killed with SIGKILL while it publishes a backlog:
// what it published and had not yet checkpointed is published again by
// the next run, and the server, recognising each Nats-Msg-Id, stores it
// once. The stream ends holding every committed boundary exactly once,
// in order — nothing lost, nothing twice.
func TestAKilledNATSRelayLosesNothingAndDuplicatesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	url := os.Getenv("PASSAGE_TEST_NATS")
	if url == "" {
		t.Skip("PASSAGE_TEST_NATS is not set")
	}
	ctx := context.Background()
	dir := t.TempDir()
	bin := filepath.Join(dir, "ticker")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	nc, err := nats.Connect(url)
	require.NoError(t, err)
	t.Cleanup(nc.Close) // after the stream's deletion
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	prefix := "passagetest." + hex.EncodeToString(b)
	stream := sink.NATSStreamName(prefix)
	t.Cleanup(func() {
		if err := js.DeleteStream(context.Background(), stream); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Errorf("delete stream %s: %v (it stays on the NATS server)", stream, err)
		}
	})
	count := func() int {
		s, err := js.Stream(ctx, stream)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return 0
		}
		require.NoError(t, err)
		info, err := s.Info(ctx)
		require.NoError(t, err)
		return int(info.State.Msgs)
	}

	// A backlog of 3,000 minutes, recorded by a backfill and then
	// published from the outbox in pages of 1,000, the checkpoint moving
	// after each page.
	const backlog = 3000
	db := filepath.Join(dir, "passage.db")
	until := time.Now().UTC().Truncate(time.Minute).Add(-time.Minute)
	from := until.Add(-backlog * time.Minute)
	seedCursor(t, db, tick.Minute, from)
	args := []string{"--db", db, "--units", "minute", "--holder", "h1", "--nats", url, "--nats-prefix", prefix}
	first := exec.Command(bin, append([]string{"run", "--until", until.Format(time.RFC3339)}, args...)...)
	first.Stdout, first.Stderr = os.Stdout, os.Stderr
	require.NoError(t, first.Start())
	exited := make(chan error, 1)
	go func() { exited <- first.Wait() }()
	// Killed once some of the backlog is on the stream, well before all.
	require.Eventually(t, func() bool { return count() >= 200 }, time.Minute, time.Millisecond, "the backfill's first publishes")
	require.NoError(t, first.Process.Kill())
	<-exited
	atKill := count()
	require.Less(t, atKill, backlog, "killed before it published everything")

	// The next run (the same holder: the lease is its own) delivers what
	// the outbox holds past the checkpoint, the published-not-checkpointed
	// records among it.
	next := exec.Command(bin, append([]string{"run", "--once"}, args...)...)
	var stdout, stderr bytes.Buffer
	next.Stdout, next.Stderr = &stdout, &stderr
	require.NoError(t, next.Run(), "%s", stderr.String())
	require.Empty(t, stdout.String(), "--nats replaces stdout")
	m := regexp.MustCompile(`delivered (\d+) record`).FindStringSubmatch(stderr.String())
	require.NotNil(t, m, "%s", stderr.String())
	delivered, _ := strconv.Atoi(string(m[1]))

	// The oracle: every minute after the seeded cursor up to the one the
	// cursor stands at now, each once and in order.
	sdb, err := sqldb.Open(ctx, db)
	require.NoError(t, err)
	defer sdb.Close()
	store, err := tick.NewSQLStore(ctx, sdb.DB)
	require.NoError(t, err)
	cursors, err := store.Cursors(ctx)
	require.NoError(t, err)
	last := cursors[tick.Minute]
	want := int(last.Sub(from) / time.Minute)
	require.GreaterOrEqual(t, want, backlog)
	t.Logf("%d boundaries: %d on the stream at the kill, %d delivered by the next run (%d published twice)", want, atKill, delivered, atKill+delivered-want)
	require.Greater(t, atKill+delivered, want, "the next run published again some of what the killed one had (%d on the stream at the kill, %d delivered after, %d in all)", atKill, delivered, want)

	s, err := js.Stream(ctx, stream)
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, want, int(info.State.Msgs), "each boundary stored once: %d published at the kill, %d after", atKill, delivered)
	for seq := uint64(1); seq <= uint64(want); seq++ {
		msg, err := s.GetMsg(ctx, info.State.FirstSeq+seq-1)
		require.NoError(t, err)
		boundary := from.Add(time.Duration(seq) * time.Minute)
		require.Equal(t, "minute/"+boundary.Format(time.RFC3339), msg.Header.Get(jetstream.MsgIDHeader), "message %d", seq)
	}
}
