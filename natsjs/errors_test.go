package natsjs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/natsjs"
)

// A server started without JetStream: every entry point that asks it for
// a stream says so, naming the server, in under a second (it said "nats:
// no responders available for request").
func TestWithoutJetStreamEachEntryPointSaysSo(t *testing.T) {
	t.Parallel()
	c := startChildWithoutJetStream(t)
	_, js := connect(t, c.url())
	n := unique(t)
	for _, call := range []struct {
		name string
		do   func(context.Context) error
	}{
		{"EnsureStream", func(ctx context.Context) error {
			_, err := natsjs.EnsureStream(ctx, js, n.stream, n.prefix)
			return err
		}},
		{"NewPublisher", func(ctx context.Context) error {
			_, err := natsjs.NewPublisher(ctx, js, n.prefix)
			return err
		}},
		{"NewEventSink", func(ctx context.Context) error {
			_, err := natsjs.NewEventSink(ctx, js, n.prefix)
			return err
		}},
		{"Consumer.Start", func(ctx context.Context) error {
			cons, err := natsjs.NewConsumer(js, n.prefix, "orders", newBus(t))
			require.NoError(t, err)
			return cons.Start(ctx)
		}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		start := time.Now()
		err := call.do(ctx)
		took := time.Since(start)
		cancel()
		require.ErrorIs(t, err, natsjs.ErrJetStreamNotEnabled, call.name)
		require.ErrorContains(t, err, "JetStream is not enabled on the server at "+c.url()+": start nats-server with -js", call.name)
		require.Less(t, took, time.Second, call.name)
	}
}

// A stream whose subjects would overlap an existing one's: the error
// names that stream, its subjects and the prefix to change, and offers
// the stream itself when it stores every subject the prefix needs.
func TestAnOverlappingStreamIsNamed(t *testing.T) {
	t.Parallel()
	url := serverURL(t)
	_, js := connect(t, url)
	ctx := context.Background()
	n := unique(t)
	// Subjects of the test's own on the shared server: passagetest.<id>.>
	// stands for the binary's PASSAGE on passage.>.
	wide := n.prefix[:len(n.prefix)-len(".time")]
	for _, c := range []struct {
		subjects []string
		covers   bool
	}{
		{[]string{"elsewhere." + n.stream, wide + ".>"}, true},
		{[]string{n.prefix + ".minute"}, false},
	} {
		existing := n.stream + "_EXISTING"
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: existing, Subjects: c.subjects, Storage: jetstream.MemoryStorage})
		require.NoError(t, err)
		deleteWithTest(t, js, existing)

		_, err = natsjs.EnsureStream(ctx, js, n.stream, n.prefix)
		require.ErrorIs(t, err, natsjs.ErrSubjectsOverlap)
		var oe *natsjs.OverlapError
		require.True(t, errors.As(err, &oe))
		require.Equal(t, existing, oe.Existing)
		require.Equal(t, c.subjects, oe.Subjects)
		require.Equal(t, c.covers, oe.Covers)
		require.ErrorContains(t, err, "cannot create stream "+n.stream+" for "+n.prefix+".> on "+url+": its subjects overlap stream "+existing+"'s "+c.subjects[0])
		require.ErrorContains(t, err, "choose another prefix (the prefix option or flag)")
		if c.covers {
			require.ErrorContains(t, err, "or name stream "+existing+" (the stream option or flag)")
			// And it does: the existing stream is taken as it is.
			_, err := natsjs.EnsureStream(ctx, js, existing, n.prefix, natsjs.WithDuplicateWindow(time.Second))
			require.NoError(t, err)
		} else {
			require.NotContains(t, err.Error(), "or name stream")
		}
		require.NoError(t, js.DeleteStream(ctx, existing))
	}
}
