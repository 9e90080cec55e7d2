package sink

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"
)

// Header names of a webhook request. The webhook- headers are Standard
// Webhooks'; X-Passage-Event and X-Passage-Signature are the headers of
// before it, sent for one more release beside them.
const (
	// HeaderWebhookID is the record's key (Standard Webhooks).
	HeaderWebhookID = "webhook-id"
	// HeaderWebhookTimestamp is when the request was sent, in unix
	// seconds (Standard Webhooks).
	HeaderWebhookTimestamp = "webhook-timestamp"
	// HeaderWebhookSignature is "v1,<base64 HMAC-SHA256 of
	// id.timestamp.body>" (Standard Webhooks).
	HeaderWebhookSignature = "webhook-signature"
	// HeaderIdempotency is the record's key, as webhook-id.
	HeaderIdempotency = "Idempotency-Key"
	// HeaderEvent is the record's type, as the body's "type". Sent for
	// one more release (see docs/events.md).
	HeaderEvent = "X-Passage-Event"
	// HeaderSignature is "sha256=<hex HMAC-SHA256 of the body>", which
	// no timestamp protects from a replay: verify webhook-signature
	// instead. Sent for one more release (see docs/events.md).
	HeaderSignature = "X-Passage-Signature"

	// ContentTypeCloudEvent is a webhook body's Content-Type: a
	// CloudEvent in the structured content mode of the CloudEvents HTTP
	// binding.
	ContentTypeCloudEvent = "application/cloudevents+json; charset=utf-8"
)

// WebhookConfig configures a Webhook. Zero fields take the defaults given.
type WebhookConfig struct {
	// URL receives one POST per record. Required, http or https.
	URL string
	// Secret signs every request. Empty sends no signature. A secret
	// written as Standard Webhooks serialises one, "whsec_" and the
	// base64 of its bytes, signs webhook-signature with those bytes
	// (NewWebhook refuses one whose rest is not base64); any other
	// secret signs it with its own bytes, as if it were
	// "whsec_"+base64(Secret). X-Passage-Signature is signed with Secret
	// as it is, as before.
	Secret []byte
	// Client sends the requests. Default: a client with a 10 s timeout and
	// a transport of its own.
	Client *http.Client
	// Clock gives webhook-timestamp. Default: the real clock, which a
	// receiver compares it with; a ticker on a simulated clock still
	// stamps its requests with real time.
	Clock clockwork.Clock
}

// Webhook posts records to one URL, one request per Send. It does not
// retry: whoever calls Send (the outbox's relay in "ticker run") retries a
// refusal with backoff, and keeps each stream's records in order.
type Webhook struct {
	cfg      WebhookConfig
	key      []byte // Standard Webhooks' signing key
	redacted string // the URL without its password or query, for errors and names
}

// NewWebhook checks cfg and returns a Webhook.
func NewWebhook(cfg WebhookConfig) (*Webhook, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: %q", ErrBadWebhookURL, cfg.URL)
	}
	key, err := WebhookKey(cfg.Secret)
	if err != nil {
		return nil, err
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
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	return &Webhook{cfg: cfg, key: key, redacted: redacted}, nil
}

// URL returns where the webhook posts, with any password and query
// hidden.
func (w *Webhook) URL() string { return w.redacted }

// Send posts one record: its CloudEvent (body as it was stored, or the
// envelope of a body an older ticker stored before it) as the request's
// body, signed as Standard Webhooks specifies when the webhook has a
// secret:
//
//	Content-Type:        application/cloudevents+json; charset=utf-8
//	webhook-id:          key, the body's "id"
//	webhook-timestamp:   the unix seconds of this attempt
//	webhook-signature:   v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">
//	Idempotency-Key:     key
//	X-Passage-Event:     typ (deprecated)
//	X-Passage-Signature: sha256=<hex HMAC-SHA256 of the body> (deprecated)
//
// Each attempt has its own timestamp and signature; the body and the id
// stay the same. A status outside 2xx, or no answer within the client's
// timeout, is a refusal (an error). It is safe for concurrent use.
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
	req.Header.Set("Content-Type", ContentTypeCloudEvent)
	req.Header.Set(HeaderWebhookID, key)
	req.Header.Set(HeaderIdempotency, key)
	req.Header.Set(HeaderEvent, typ)
	now := w.cfg.Clock.Now()
	req.Header.Set(HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
	if len(w.cfg.Secret) > 0 {
		req.Header.Set(HeaderWebhookSignature, SignWebhook(w.key, key, now, body))
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

// webhookSecretPrefix marks a secret serialised as Standard Webhooks
// does: the base64 of its bytes after it.
const webhookSecretPrefix = "whsec_"

// WebhookKey returns the key that signs webhook-signature for secret:
// the bytes a "whsec_<base64>" secret encodes, or any other secret's own
// bytes. A secret that starts with whsec_ and whose rest is not base64
// is an error (ErrBadWebhookSecret): a receiver given it could verify
// nothing.
func WebhookKey(secret []byte) ([]byte, error) {
	rest, ok := strings.CutPrefix(string(secret), webhookSecretPrefix)
	if !ok {
		return secret, nil
	}
	key, err := base64.StdEncoding.DecodeString(rest)
	if err != nil || len(key) == 0 {
		return nil, fmt.Errorf("%w: it starts with %s but the rest is not the base64 of a key", ErrBadWebhookSecret, webhookSecretPrefix)
	}
	return key, nil
}

// SignWebhook returns Standard Webhooks' webhook-signature of a request
// with id, sent at ts, carrying body, under key (see WebhookKey): "v1,"
// and the base64 HMAC-SHA256 of "<id>.<unix seconds>.<body>".
func SignWebhook(key []byte, id string, ts time.Time, body []byte) string {
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%d.", id, ts.Unix())
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Sign returns the X-Passage-Signature value of body: "sha256=" and the hex
// HMAC-SHA256 of body keyed with secret. webhook-signature (SignWebhook)
// signs the id and a timestamp too, which this does not.
func Sign(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// Verify reports whether signature is body's valid X-Passage-Signature under
// secret, in constant time. A receiver should verify webhook-signature
// with a Standard Webhooks library instead, which also refuses a
// replayed request.
func Verify(secret, body []byte, signature string) bool {
	want := Sign(secret, body)
	return strings.HasPrefix(signature, "sha256=") && hmac.Equal([]byte(signature), []byte(want))
}
