package sink_test

import (
	"encoding/base64"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/passage-of-time/passage/cmd/ticker/internal/sink"
)

// SignWebhook against the vector the Standard Webhooks libraries share
// (their Go and Python tests: secret, message id, timestamp, payload and
// the signature they expect), which this code did not produce.
func TestSignWebhookMatchesTheStandardsVector(t *testing.T) {
	t.Parallel()
	key, err := sink.WebhookKey([]byte("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"))
	require.NoError(t, err)
	got := sink.SignWebhook(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	require.Equal(t, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", got)

	// A secret without the prefix signs with its own bytes, as the
	// secret whsec_<base64 of them> does.
	raw, err := sink.WebhookKey([]byte("shared-secret"))
	require.NoError(t, err)
	same, err := sink.WebhookKey([]byte("whsec_" + base64.StdEncoding.EncodeToString([]byte("shared-secret"))))
	require.NoError(t, err)
	require.Equal(t, raw, same)

	_, err = sink.WebhookKey([]byte("whsec_not base64!"))
	require.ErrorIs(t, err, sink.ErrBadWebhookSecret)
	_, err = sink.NewWebhook(sink.WebhookConfig{URL: "http://127.0.0.1/hook", Secret: []byte("whsec_")})
	require.ErrorIs(t, err, sink.ErrBadWebhookSecret)
}

// A delivered webhook verifies with the Standard Webhooks Go library as
// its users call it (NewWebhook with the whsec_ secret, Verify with the
// body and the request's headers); the same request replayed an hour
// later is refused by that verification, as is a forged body or another
// record's id. A webhook whose secret has no whsec_ prefix verifies with
// the library given whsec_ and the base64 of that secret.
func TestAWebhookVerifiesWithTheStandardWebhooksLibrary(t *testing.T) {
	t.Parallel()
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	srv, got := capture(t)
	hook, err := sink.NewWebhook(sink.WebhookConfig{URL: srv.URL, Secret: []byte(secret)})
	require.NoError(t, err)
	require.NoError(t, send(t, hook, minute(1)))
	// The same record captured an hour ago: a hook whose clock stood an
	// hour back sent it, so verifying it now is replaying it an hour
	// after it was sent (the library reads the real clock).
	ago, err := sink.NewWebhook(sink.WebhookConfig{URL: srv.URL, Secret: []byte(secret), Clock: clockwork.NewFakeClockAt(time.Now().Add(-time.Hour))})
	require.NoError(t, err)
	require.NoError(t, send(t, ago, minute(1)))
	reqs := got()
	require.Len(t, reqs, 2)

	wh, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	fresh, replayed := reqs[0], reqs[1]
	require.NoError(t, wh.Verify(fresh.body, fresh.header), "a request just sent verifies")
	require.Equal(t, minute(1).ID(), fresh.header.Get("webhook-id"), "webhook-id is the record's key")
	require.Equal(t, fresh.header.Get("webhook-id"), fresh.header.Get(sink.HeaderIdempotency))
	require.Equal(t, "application/cloudevents+json; charset=utf-8", fresh.header.Get("Content-Type"))
	require.True(t, sink.Verify([]byte(secret), fresh.body, fresh.header.Get(sink.HeaderSignature)), "the old header, for one release")

	require.ErrorIs(t, wh.Verify(replayed.body, replayed.header), standardwebhooks.ErrMessageTooOld, "replayed an hour later")
	require.NoError(t, wh.VerifyIgnoringTimestamp(replayed.body, replayed.header), "only its age is wrong")

	forged := append([]byte(nil), fresh.body...)
	forged[len(forged)-2] = '!'
	require.ErrorIs(t, wh.Verify(forged, fresh.header), standardwebhooks.ErrNoMatchingSignature, "a forged body")
	other := fresh.header.Clone()
	other.Set("webhook-id", minute(2).ID())
	require.ErrorIs(t, wh.Verify(fresh.body, other), standardwebhooks.ErrNoMatchingSignature, "under another record's id")

	// A secret of before, without the prefix.
	srv2, got2 := capture(t)
	plain, err := sink.NewWebhook(sink.WebhookConfig{URL: srv2.URL, Secret: []byte("shared-secret")})
	require.NoError(t, err)
	require.NoError(t, send(t, plain, minute(1)))
	wh2, err := standardwebhooks.NewWebhook("whsec_" + base64.StdEncoding.EncodeToString([]byte("shared-secret")))
	require.NoError(t, err)
	req := got2()[0]
	require.NoError(t, wh2.Verify(req.body, req.header))
	require.True(t, sink.Verify([]byte("shared-secret"), req.body, req.header.Get(sink.HeaderSignature)))
}

// Each attempt of a record is stamped and signed anew (a retry an hour
// after the first attempt still verifies), while its body and id stay
// the same.
func TestEachAttemptIsSignedAtItsOwnTime(t *testing.T) {
	t.Parallel()
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	srv, got := capture(t)
	clock := clockwork.NewFakeClockAt(time.Now().Add(-time.Hour))
	hook, err := sink.NewWebhook(sink.WebhookConfig{URL: srv.URL, Secret: []byte(secret), Clock: clock})
	require.NoError(t, err)
	require.NoError(t, send(t, hook, minute(1)))
	clock.Advance(time.Hour)
	require.NoError(t, send(t, hook, minute(1)))
	reqs := got()
	require.Len(t, reqs, 2)
	require.Equal(t, string(reqs[0].body), string(reqs[1].body))
	require.Equal(t, reqs[0].header.Get("webhook-id"), reqs[1].header.Get("webhook-id"))
	require.NotEqual(t, reqs[0].header.Get("webhook-timestamp"), reqs[1].header.Get("webhook-timestamp"))
	wh, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	require.Error(t, wh.Verify(reqs[0].body, reqs[0].header))
	require.NoError(t, wh.Verify(reqs[1].body, reqs[1].header), "the retry carries its own time")
}
