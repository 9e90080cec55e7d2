package natsjs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultDuplicateWindow is the duplicate window EnsureStream gives a
// stream it creates unless WithDuplicateWindow says otherwise: JetStream's
// own default.
const DefaultDuplicateWindow = 2 * time.Minute

// StreamOption configures EnsureStream. Each option checks its value and
// EnsureStream returns the first error, wrapping ErrInvalidOption.
type StreamOption func(*streamConfig) error

type streamConfig struct {
	window  time.Duration
	maxAge  time.Duration
	storage jetstream.StorageType
}

// WithDuplicateWindow sets how long the server remembers a Nats-Msg-Id:
// the window a stream is created with, and the least an existing one must
// have. Make it at least the ticker's lease TTL (tick.WithLease): a
// replica that takes the lease over re-emits the boundaries its
// predecessor published but had not yet recorded, up to a TTL later, and
// the server de-duplicates them only within the window.
func WithDuplicateWindow(d time.Duration) StreamOption {
	return func(c *streamConfig) error {
		if d <= 0 {
			return fmt.Errorf("%w: WithDuplicateWindow: %v must be positive", ErrInvalidOption, d)
		}
		c.window = d
		return nil
	}
}

// WithMaxAge makes a created stream discard messages older than d
// (default: keep them all). A consumer that stays behind longer than d
// loses the boundaries it had not read; d shorter than the duplicate
// window is refused, since the server then forgets a message before its
// id.
func WithMaxAge(d time.Duration) StreamOption {
	return func(c *streamConfig) error {
		if d <= 0 {
			return fmt.Errorf("%w: WithMaxAge: %v must be positive", ErrInvalidOption, d)
		}
		c.maxAge = d
		return nil
	}
}

// WithMemoryStorage makes a created stream keep its messages in memory
// rather than in files (the default): faster, and lost with the server.
func WithMemoryStorage() StreamOption {
	return func(c *streamConfig) error {
		c.storage = jetstream.MemoryStorage
		return nil
	}
}

// EnsureStream creates the stream name storing every subject under prefix
// (prefix.>), or checks the one that exists: it must store all of them
// (ErrNoStream otherwise) and remember message ids for at least the
// duplicate window (ErrDuplicateWindow otherwise, naming both windows).
// An existing stream is never changed: widening its window is the
// operator's decision, taken with `nats stream edit`. A stream the
// server refuses because its subjects overlap another's is an
// *OverlapError (ErrSubjectsOverlap) naming that stream and its
// subjects; a server without JetStream is ErrJetStreamNotEnabled, naming
// the server.
func EnsureStream(ctx context.Context, js jetstream.JetStream, name, prefix string, opts ...StreamOption) (jetstream.Stream, error) {
	if js == nil {
		return nil, fmt.Errorf("%w: EnsureStream: nil JetStream", ErrInvalidOption)
	}
	if name == "" {
		return nil, fmt.Errorf("%w: EnsureStream: empty stream name", ErrInvalidOption)
	}
	if err := CheckPrefix(prefix); err != nil {
		return nil, err
	}
	cfg := streamConfig{window: DefaultDuplicateWindow, storage: jetstream.FileStorage}
	for _, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("%w: EnsureStream: nil option", ErrInvalidOption)
		}
		if err := opt(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.maxAge > 0 && cfg.maxAge < cfg.window {
		return nil, fmt.Errorf("%w: WithMaxAge %v is shorter than the duplicate window %v", ErrInvalidOption, cfg.maxAge, cfg.window)
	}
	s, err := js.Stream(ctx, name)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		s, err = js.CreateStream(ctx, jetstream.StreamConfig{
			Name:        name,
			Description: "passage: events under " + prefix,
			Subjects:    []string{all(prefix)},
			Duplicates:  cfg.window,
			MaxAge:      cfg.maxAge,
			Storage:     cfg.storage,
		})
		if err != nil {
			if off := notEnabled(js.Conn(), err); off != nil {
				return nil, off
			}
			if isOverlap(err) {
				return nil, overlapping(ctx, js, name, prefix, err)
			}
			return nil, fmt.Errorf("natsjs: create stream %s for %s %s: %w", name, all(prefix), where(js.Conn()), err)
		}
		return s, nil
	case err != nil:
		if off := notEnabled(js.Conn(), err); off != nil {
			return nil, off
		}
		return nil, fmt.Errorf("natsjs: look up stream %s %s: %w", name, where(js.Conn()), err)
	}
	if err := checkStream(s.CachedInfo(), prefix, cfg.window); err != nil {
		return nil, err
	}
	return s, nil
}

// checkStream says why an existing stream cannot hold prefix's events
// de-duplicated within window, or nil.
func checkStream(info *jetstream.StreamInfo, prefix string, window time.Duration) error {
	c := info.Config
	if !slices.ContainsFunc(c.Subjects, func(f string) bool { return covers(f, prefix) }) {
		return fmt.Errorf("%w: stream %s stores %q, not all of %s", ErrNoStream, c.Name, c.Subjects, all(prefix))
	}
	if c.Duplicates < window {
		return fmt.Errorf("%w: stream %s keeps message ids for %v, less than the %v asked for: a boundary re-published after %v would be stored twice (widen it with `nats stream edit %s --dupe-window %v`)",
			ErrDuplicateWindow, c.Name, c.Duplicates, window, c.Duplicates, c.Name, window)
	}
	return nil
}

// streamFor finds the stream storing prefix's subjects and checks it
// stores all of them. Its error names the server the connection is on
// and its state, since the usual reason is a server that does not answer.
func streamFor(ctx context.Context, js jetstream.JetStream, prefix string) (jetstream.Stream, error) {
	name, err := js.StreamNameBySubject(ctx, all(prefix))
	if err != nil {
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, fmt.Errorf("%w: no stream stores %s (create it with EnsureStream)", ErrNoStream, all(prefix))
		}
		if off := notEnabled(js.Conn(), err); off != nil {
			return nil, off
		}
		return nil, fmt.Errorf("natsjs: find the stream of %s %s: %w", all(prefix), where(js.Conn()), err)
	}
	s, err := js.Stream(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("natsjs: look up stream %s: %w", name, err)
	}
	if err := checkStream(s.CachedInfo(), prefix, 0); err != nil {
		return nil, err
	}
	return s, nil
}

// notEnabled is the error for err when it says the server has no
// JetStream, naming the server and the fix; nil otherwise. A server
// started without -js has no responder on $JS.API, so a request gets
// "no responders" back at once; an account without JetStream gets the
// server's own answer.
func notEnabled(conn *nats.Conn, err error) error {
	switch {
	case errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
		return fmt.Errorf("%w at %s for this connection's account: enable JetStream for the account in the server's configuration (%v)", ErrJetStreamNotEnabled, serverURL(conn), err)
	case errors.Is(err, nats.ErrNoResponders), errors.Is(err, jetstream.ErrJetStreamNotEnabled):
		return fmt.Errorf("%w at %s: start nats-server with -js, or with a jetstream block in its configuration (%v)", ErrJetStreamNotEnabled, serverURL(conn), err)
	}
	return nil
}

// streamSubjectOverlap is the server's error code for a stream whose
// subjects overlap another's (JSStreamSubjectOverlapErr).
const streamSubjectOverlap jetstream.ErrorCode = 10065

// isOverlap reports whether err is the server's refusal of a stream whose
// subjects overlap another's.
func isOverlap(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == streamSubjectOverlap
}

// overlapping is the *OverlapError for a stream name on prefix that the
// server refused (err) because its subjects overlap an existing stream's:
// it lists the streams to name the one that overlaps.
func overlapping(ctx context.Context, js jetstream.JetStream, name, prefix string, err error) error {
	oe := &OverlapError{Stream: name, Prefix: prefix, Server: serverURL(js.Conn()), Err: err}
	streams := js.ListStreams(ctx)
	for info := range streams.Info() {
		subjects := info.Config.Subjects
		if slices.ContainsFunc(subjects, func(f string) bool { return overlaps(f, all(prefix)) }) {
			oe.Existing, oe.Subjects = info.Config.Name, subjects
			oe.Covers = slices.ContainsFunc(subjects, func(f string) bool { return covers(f, prefix) })
			return oe
		}
	}
	if lerr := streams.Err(); lerr != nil {
		oe.Err = errors.Join(err, fmt.Errorf("list streams: %w", lerr))
	}
	return oe
}

// serverURL is the URL of the server conn is on, without its password, or
// those it tries.
func serverURL(conn *nats.Conn) string {
	if conn == nil {
		return "(no connection)"
	}
	if url := conn.ConnectedUrlRedacted(); url != "" {
		return url
	}
	return strings.Join(conn.Servers(), ", ")
}

// where names the server a connection is on, or the ones it tries, and
// its state, for errors: "on nats://127.0.0.1:4222 (connection
// CONNECTED)". The connected URL is printed without its password.
func where(conn *nats.Conn) string {
	if conn == nil {
		return "without a connection"
	}
	return fmt.Sprintf("on %s (connection %v)", serverURL(conn), conn.Status())
}
