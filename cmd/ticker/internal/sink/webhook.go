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
	"time"
)

// Header names of a webhook request.
const (
	HeaderSignature   = "X-Passage-Signature"
	HeaderEvent       = "X-Passage-Event"
	HeaderIdempotency = "Idempotency-Key"
)

// WebhookConfig configures a Webhook. Zero fields take the defaults given.
type WebhookConfig struct {
	// URL receives one POST per record. Required, http or https.
	URL string
	// Secret signs every body with HMAC-SHA256. Empty sends no signature.
	Secret []byte
	// Client sends the requests. Default: a client with a 10 s timeout and
	// a transport of its own.
	Client *http.Client
}

// Webhook posts records to one URL, one request per Send. It does not
// retry: whoever calls Send (the outbox's relay in "ticker run") retries a
// refusal with backoff, and keeps each stream's records in order.
type Webhook struct {
	cfg      WebhookConfig
	redacted string // the URL without its password or query, for errors and names
}

// NewWebhook checks cfg and returns a Webhook.
func NewWebhook(cfg WebhookConfig) (*Webhook, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: %q", ErrBadWebhookURL, cfg.URL)
	}
	// The query may carry a token ("?token=…"), as the password does.
	shown := *u
	if shown.RawQuery != "" {
		shown.RawQuery = "…"
	}
	shown.Fragment = ""
	redacted := shown.Redacted()
	if cfg.Client == nil {
		// A transport of its own: http.DefaultTransport is shared with the
		// rest of the process, whose CloseIdleConnections (httptest's
		// Server.Close calls it) breaks a request this webhook has in flight.
		cfg.Client = &http.Client{Timeout: 10 * time.Second, Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	return &Webhook{cfg: cfg, redacted: redacted}, nil
}

// URL returns where the webhook posts, with any password and query
// hidden.
func (w *Webhook) URL() string { return w.redacted }

// Send posts one record: its CloudEvent (body as it was stored, or the
// envelope of a body an older ticker stored before it) in the
// structured content mode, with key as the Idempotency-Key header and
// typ as X-Passage-Event, signed when the webhook has a secret. A status
// outside 2xx, or no answer within the client's timeout, is a refusal
// (an error). It is safe for concurrent use.
func (w *Webhook) Send(ctx context.Context, key, typ string, body []byte) error {
	body, err := envelopeOf(typ, body)
	if err == nil {
		err = w.post(ctx, body, key, typ)
	}
	if err != nil {
		return fmt.Errorf("sink: webhook %s: %s: %w", w.redacted, key, err)
	}
	return nil
}

func (w *Webhook) post(ctx context.Context, body []byte, key, typ string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/cloudevents+json; charset=utf-8")
	req.Header.Set(HeaderIdempotency, key)
	req.Header.Set(HeaderEvent, typ)
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
