package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
	"github.com/passage-of-time/passage/natsjs"
)

// natsFlags are "ticker run"'s flags of its NATS JetStream sink: one
// more sink beside the webhooks, with a relay and a checkpoint of its
// own (delivery.go).
type natsFlags struct {
	url, prefix, stream string
}

// addNATS declares --nats, --nats-prefix and --nats-stream ("ticker run"
// alone).
func (f *sinkFlags) addNATS(c *cobra.Command) {
	fs := c.Flags()
	fs.StringVar(&f.nats.url, "nats", "", "publish each record to NATS JetStream at this URL (nats://host:4222; a cluster's servers comma-separated) after its commit, with Nats-Msg-Id its key; replaces stdout unless --stdout")
	fs.StringVar(&f.nats.prefix, "nats-prefix", sink.DefaultNATSPrefix, "subject prefix of --nats: boundaries on <prefix>.<unit> and skip reports on <prefix>.skipped.<unit> as natsjs lays time out (a natsjs.Consumer of the prefix reads them), runs on <prefix>.schedule.<name>")
	fs.StringVar(&f.nats.stream, "nats-stream", "", "the JetStream stream of <prefix>.>, created when missing (default the prefix in capitals, dots as underscores: PASSAGE)")
}

// checkNATS refuses what no server could take — a URL that is not
// nats://, a prefix with a wildcard — and the NATS flags without --nats,
// as flag errors, before anything is opened.
func (f *sinkFlags) checkNATS() error {
	if f.nats.url == "" {
		if f.given("nats") {
			return usagef("--nats: empty (want a URL such as nats://127.0.0.1:4222)")
		}
		for _, name := range []string{"nats-prefix", "nats-stream"} {
			if f.given(name) {
				return usagef("--%s: shapes the delivery to NATS, and no --nats URL is given", name)
			}
		}
		return nil
	}
	if len(f.webhooks) == 0 && f.given("webhook-secret-env") {
		return usagef("--webhook-secret-env: signs webhook bodies, and no --webhook is given (NATS messages are not signed)")
	}
	// The window is withNATS's to work out; any positive one passes here.
	_, err := sink.CheckNATS(sink.NATSConfig{URL: f.nats.url, Prefix: f.nats.prefix, Stream: f.nats.stream, Window: time.Minute})
	if err != nil {
		// "--nats: subject prefix "a.*": token …", without the sentinel's
		// words between.
		return usagef("--nats: %s", strings.TrimPrefix(err.Error(), sink.ErrBadNATSConfig.Error()+": "))
	}
	return nil
}

// withNATS adds the NATS sink to senders when --nats is given. It
// connects and creates or checks the stream now, before the database is
// opened: an unreachable server, or a stream that would store a record
// published twice, stops the run before anything is recorded or
// published.
func (f *sinkFlags) withNATS(ctx context.Context, senders []sender, leaseTTL time.Duration) ([]sender, error) {
	if f.nats.url == "" {
		return senders, nil
	}
	window := natsWindow(f.backoff, f.attempts, leaseTTL)
	n, err := sink.NewNATS(ctx, sink.NATSConfig{URL: f.nats.url, Prefix: f.nats.prefix, Stream: f.nats.stream, Window: window})
	if errors.Is(err, natsjs.ErrDuplicateWindow) {
		return nil, fmt.Errorf("--nats: %w; %v is how long a record may be published again after the server stored it: the relay tries a record up to %d times (--webhook-attempts), waiting --webhook-backoff %v doubled up to %v between tries and up to %v for each ack, and a replica takes the lease over after --lease-ttl %v; lower those flags or widen the stream's window",
			err, window, f.attempts, f.backoff, max(f.backoff, relayBackoffMax), sink.NATSPublishTimeout, leaseTTL)
	}
	if err != nil {
		return nil, fmt.Errorf("--nats: %w", err)
	}
	// The checkpoint's key: the servers without credentials (a password
	// changed is the same sink), the stream and the subjects.
	servers := n.URL()
	if len(servers) > 200 {
		servers = servers[:200] + "…"
	}
	name := fmt.Sprintf("nats %s stream %s (%s.>)", servers, n.Stream(), n.Prefix())
	return append(senders, sender{name: name, send: n.Send, parallel: relayParallel, close: n.Close}), nil
}

// natsWindow is the least duplicate window the NATS stream must have for
// a record published twice to be stored once. A record is published
// again after the server stored it in two ways. A publish whose ack did
// not come in time is a refusal: the relay tries again after backoff,
// doubled up to relayBackoffMax, each retry up to a poll late, each try
// waiting up to sink.NATSPublishTimeout, until the record is taken or
// parked after attempts tries. And a process that dies between a publish
// and its checkpoint leaves the record to the next holder of the lease,
// at most leaseTTL later. The window is the sum, rounded up to a minute.
// (A process restarted after a longer downtime publishes again at most
// what it had published and not checkpointed; the stream may then hold
// it twice, under one Nats-Msg-Id a consumer de-duplicates by.)
func natsWindow(backoff time.Duration, attempts int, leaseTTL time.Duration) time.Duration {
	limit := max(backoff, relayBackoffMax)
	total := time.Duration(attempts)*sink.NATSPublishTimeout + leaseTTL
	for d, n := backoff, 1; n < attempts; n++ {
		total += min(d, limit) + relayPoll
		d = min(2*d, limit)
	}
	return (total + time.Minute - 1).Truncate(time.Minute)
}

// closeSenders closes the sinks that hold a connection.
func closeSenders(senders []sender) {
	for _, s := range senders {
		if s.close != nil {
			s.close()
		}
	}
}
