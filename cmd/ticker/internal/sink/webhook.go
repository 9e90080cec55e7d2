package sink

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// Header names of a webhook request.
const (
	HeaderSignature   = "X-Passage-Signature"
	HeaderEvent       = "X-Passage-Event"
	HeaderIdempotency = "Idempotency-Key"
)

// WebhookConfig configures a Webhook. Zero fields take the defaults given.
type WebhookConfig struct {
	// URL receives one POST per event. Required, http or https.
	URL string
	// Secret signs every body with HMAC-SHA256. Empty sends no signature.
	Secret []byte
	// Client sends the requests. Default: a client with a 10 s timeout and
	// a transport of its own.
	Client *http.Client
	// Attempts is how many times one event is tried within one Publish
	// call before Publish gives up and returns the error (the ticker then
	// offers it again at its next wake-up). Default 5.
	Attempts int
	// InitialBackoff is the wait after the first failure, doubled after
	// each further one up to MaxBackoff. Defaults 200 ms and 10 s.
	InitialBackoff, MaxBackoff time.Duration
	// Clock times the backoff. Default: the real clock.
	Clock clockwork.Clock
}

// Webhook posts events to one URL, in order, retrying with backoff. Wrap it
// in a Fanout so events the receiver already acknowledged are not posted
// again when the ticker offers them a second time.
type Webhook struct {
	cfg      WebhookConfig
	redacted string     // the URL without its password, for errors
	mu       sync.Mutex // one delivery at a time keeps the order
}

// NewWebhook checks cfg and returns a Webhook.
func NewWebhook(cfg WebhookConfig) (*Webhook, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: %q", ErrBadWebhookURL, cfg.URL)
	}
	if cfg.Attempts < 0 || cfg.InitialBackoff < 0 || cfg.MaxBackoff < 0 {
		return nil, fmt.Errorf("%w: attempts %d, backoff %s, max backoff %s", ErrNegativeRetry, cfg.Attempts, cfg.InitialBackoff, cfg.MaxBackoff)
	}
	redacted := u.Redacted()
	if cfg.Client == nil {
		// A transport of its own: http.DefaultTransport is shared with the
		// rest of the process, whose CloseIdleConnections (httptest's
		// Server.Close calls it) breaks a request this webhook has in flight.
		cfg.Client = &http.Client{Timeout: 10 * time.Second, Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	if cfg.Attempts == 0 {
		cfg.Attempts = 5
	}
	if cfg.InitialBackoff == 0 {
		cfg.InitialBackoff = 200 * time.Millisecond
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = 10 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	return &Webhook{cfg: cfg, redacted: redacted}, nil
}

// URL returns where the webhook posts, with any password hidden.
func (w *Webhook) URL() string { return w.redacted }

// Publish posts the events one by one, in order. It returns at the first
// event still failing after its attempts, so later events are never
// delivered before an earlier one.
func (w *Webhook) Publish(ctx context.Context, events ...any) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, event := range events {
		body, rec, err := Marshal(event)
		if err != nil {
			return err
		}
		if err := w.deliver(ctx, body, rec); err != nil {
			return err
		}
	}
	return nil
}

func (w *Webhook) deliver(ctx context.Context, body []byte, rec Envelope) error {
	backoff := w.cfg.InitialBackoff
	var last error
	for attempt := 1; attempt <= w.cfg.Attempts; attempt++ {
		if last = w.post(ctx, body, rec); last == nil {
			return nil
		}
		if attempt == w.cfg.Attempts {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sink: webhook %s: %s: %w (last error: %v)", w.redacted, rec.ID, ctx.Err(), last)
		case <-w.cfg.Clock.After(backoff):
		}
		backoff = min(2*backoff, w.cfg.MaxBackoff)
	}
	return fmt.Errorf("sink: webhook %s: %s: giving up after %d attempts: %w", w.redacted, rec.ID, w.cfg.Attempts, last)
}

func (w *Webhook) post(ctx context.Context, body []byte, rec Envelope) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderIdempotency, rec.ID)
	req.Header.Set(HeaderEvent, rec.Type)
	if len(w.cfg.Secret) > 0 {
		req.Header.Set(HeaderSignature, Sign(w.cfg.Secret, body))
	}
	resp, err := w.cfg.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("receiver answered %s", resp.Status)
	}
	return nil
}

// Sign returns the X-Passage-Signature value of body: "sha256=" and the hex
// HMAC-SHA256 of body keyed with secret.
func Sign(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// Verify reports whether signature is body's valid X-Passage-Signature under
// secret, in constant time.
func Verify(secret, body []byte, signature string) bool {
	want := Sign(secret, body)
	return strings.HasPrefix(signature, "sha256=") && hmac.Equal([]byte(signature), []byte(want))
}
