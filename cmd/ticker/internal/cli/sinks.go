package cli

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
	"github.com/passage-of-time/passage/internal/sqldb"
	"github.com/passage-of-time/passage/schedule"
)

// sinkFlags say where records go: stdout, webhooks, NATS ("ticker run"
// alone declares --nats, nats.go). "run", "schedule trigger" and
// "schedule backfill" share them.
type sinkFlags struct {
	webhooks  multiFlag
	secretEnv string
	attempts  int
	backoff   time.Duration
	stdout    bool
	nats      natsFlags
	cmd       *cobra.Command
}

// addSinks declares the webhook flags and --stdout.
func addSinks(c *cobra.Command) *sinkFlags {
	f := &sinkFlags{cmd: c}
	fs := c.Flags()
	fs.Var(&f.webhooks, "webhook", "POST each event as JSON to this http(s) `URL` (repeatable); replaces stdout unless --stdout")
	fs.StringVar(&f.secretEnv, "webhook-secret-env", "PASSAGE_WEBHOOK_SECRET", "environment variable holding the secret that signs webhook requests (Standard Webhooks' webhook-signature, an HMAC-SHA256 of the id, the timestamp and the body): whsec_<base64 of the key>, as Standard Webhooks writes a secret, or any other string, whose bytes are the key (docs/events.md)")
	fs.IntVar(&f.attempts, "webhook-attempts", 360, fmt.Sprintf("deliveries of one record a sink may refuse before the record is parked (listed, not offered again, and pruned with the delivered records after \"ticker run\"'s --outbox-retention; its stream goes on); each delivery is one request; about an hour of refusals at the default backoff (1 to %d)", maxWebhookAttempts))
	fs.DurationVar(&f.backoff, "webhook-backoff", 200*time.Millisecond, fmt.Sprintf("wait after a refused delivery before the record is tried again, doubled per refusal up to 10s (%s to %s)", bounds["webhook-backoff"].min, bounds["webhook-backoff"].max))
	fs.BoolVar(&f.stdout, "stdout", false, "also write JSON lines to stdout when --webhook is given")
	return f
}

// retries is how the relays retry what a sink refused.
func (f *sinkFlags) retries() retries { return retries{f.backoff, f.attempts} }

// given reports whether the flag name was set on the command line (its
// value may still equal the default: --webhook-attempts 360 was given).
func (f *sinkFlags) given(name string) bool { return f.cmd.Flags().Changed(name) }

// check checks the webhook flags' bounds, and refuses the flags that only
// shape webhooks when there is none.
func (f *sinkFlags) check() error {
	if err := checkBound("webhook-backoff", f.backoff); err != nil {
		return err
	}
	if f.attempts < 1 || f.attempts > maxWebhookAttempts {
		return usagef("--webhook-attempts %d: must be between 1 and %d", f.attempts, maxWebhookAttempts)
	}
	if len(f.webhooks) > 0 || f.nats.url != "" {
		return nil
	}
	for _, name := range []string{"webhook-attempts", "webhook-backoff", "webhook-secret-env", "stdout"} {
		if !f.given(name) {
			continue
		}
		if name == "stdout" {
			return usagef("--stdout: keeps stdout beside --webhook; without a --webhook, events go to stdout anyway")
		}
		return usagef("--%s: shapes the delivery to webhooks, and no --webhook is given", name)
	}
	return nil
}

// senders returns the sinks the flags name: stdout unless only webhooks
// (or --nats, which withNATS adds) are given, and each webhook.
func (f *sinkFlags) senders(env Env) ([]sender, error) {
	var out []sender
	if len(f.webhooks) == 0 && f.nats.url == "" || f.stdout {
		// One stream at a time keeps the lines of a pass in the order the
		// streams first appear in it.
		out = append(out, sender{name: "stdout", send: sink.NewJSONLines(env.Stdout).Send, parallel: 1})
	}
	secret := env.getenv(f.secretEnv)
	for _, u := range f.webhooks {
		hook, err := sink.NewWebhook(sink.WebhookConfig{URL: u, Secret: []byte(secret)})
		if err != nil {
			return nil, usagef("--webhook %q: %v", u, err)
		}
		out = append(out, sender{name: webhookName(hook, u), send: hook.Send, parallel: relayParallel})
	}
	if len(f.webhooks) > 0 && secret == "" {
		fmt.Fprintf(env.Stderr, "warning: $%s is empty: webhook bodies are not signed\n", f.secretEnv)
	}
	return out, nil
}

// runsOut returns the handler of "schedule trigger" and "schedule
// backfill": each run is recorded in the outbox in the transaction that
// records it, as "ticker run" records a fired slot, and the command then
// delivers to its webhooks what they have pending (see deliver). out is
// set once the database is open.
func (f *sinkFlags) runsOut(ctx context.Context, env Env) (**delivery, handlerOf, error) {
	senders, err := f.senders(env)
	if err != nil {
		return nil, nil, err
	}
	// stdout is this command's output, not a relay: a relay's checkpoint
	// is shared by every process, and "ticker run" prints the run on its
	// own stdout too.
	hooks := slices.DeleteFunc(senders, func(s sender) bool { return s.name == "stdout" })
	out := new(*delivery)
	logger := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{ReplaceAttr: losslessTimes}))
	return out, func(db *sqldb.DB) (schedule.Handler, error) {
		d, err := openDelivery(ctx, db, relaying{hooks, f.retries(), env.clock(), logger})
		if err != nil {
			return nil, err
		}
		*out = d
		return runHandler(d, nil), nil
	}, nil
}

// printRuns writes the runs' records on stdout, unless only webhooks
// are given.
func (f *sinkFlags) printRuns(env Env, runs ...schedule.Run) error {
	if len(f.webhooks) > 0 && !f.stdout {
		return nil
	}
	for _, r := range runs {
		body, _, err := sink.Marshal(r)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(env.Stdout, "%s\n", body); err != nil {
			return err
		}
	}
	return nil
}

// deliver drains the command's webhook relays after its runs committed,
// and says what it delivered and left on stderr. A record a receiver
// refused stays in the outbox: "ticker run" (or the next command with
// that webhook) retries it.
func (d *delivery) deliver(ctx context.Context, env Env) error {
	if len(d.relays) == 0 {
		return nil
	}
	dr := d.drain(ctx, drainTimeout)
	fmt.Fprintf(env.Stderr, "webhooks: %s\n", dr.summary())
	return dr.err()
}

// bounds are the ranges of the duration flags. Outside them a value is
// not a setting but a mistake: a lease of a nanosecond is renewed in a
// busy loop, and durations of centuries overflow the time arithmetic
// into the past.
var bounds = map[string]struct {
	min, max time.Duration
	why      string
}{
	"catch-up-window": {time.Minute, 10 * 366 * 24 * time.Hour, "how far back missed boundaries are emitted"},
	"lease-ttl":       {time.Second, 24 * time.Hour, "the lease is renewed every third of it"},
	"webhook-backoff": {time.Millisecond, 10 * time.Minute, "the first wait after a refused delivery"},
}

// checkBound refuses a duration flag's value outside its bounds.
func checkBound(name string, d time.Duration) error {
	if b := bounds[name]; d < b.min || d > b.max {
		return usagef("--%s %s: must be between %s and %s (%s)", name, d, b.min, b.max, b.why)
	}
	return nil
}

// Upper bounds of the count flags.
const (
	maxCatchUpMax      = 10_000_000
	maxWebhookAttempts = 100_000
)
