package natsjs

import (
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
)

// ConsumerOption configures a Consumer in NewConsumer. Each option checks
// its value and NewConsumer returns the first error, wrapping
// ErrInvalidOption.
type ConsumerOption func(*consumerConfig) error

type consumerConfig struct {
	ackWait              time.Duration
	retryFirst, retryMax time.Duration
	logger               *slog.Logger
	meters               metric.MeterProvider
}

func consumerDefaults() consumerConfig {
	return consumerConfig{
		ackWait:    30 * time.Second,
		retryFirst: time.Second,
		retryMax:   time.Minute,
		logger:     slog.Default(),
	}
}

// MinAckWait is WithAckWait's shortest wait: the consumer tells the server
// a message is still in progress every third of it, a round trip each.
const MinAckWait = 100 * time.Millisecond

// WithAckWait sets how long the server waits for an ack before it
// delivers a message again (default: 30 s). It bounds how soon a message
// whose consumer died comes back; a handler may take longer, since the
// consumer tells the server, every third of it, that it still works on
// the message.
func WithAckWait(d time.Duration) ConsumerOption {
	return func(c *consumerConfig) error {
		if d < MinAckWait {
			return fmt.Errorf("%w: WithAckWait: %v is shorter than %v", ErrInvalidOption, d, MinAckWait)
		}
		c.ackWait = d
		return nil
	}
}

// WithRetryBackoff sets how long a message whose handlers failed waits
// before it is delivered again: first after the first failure, doubling
// after each further one up to max, at most a day (default: 1 s to
// 1 min). Messages after it wait too, so that handlers see the stream in
// order.
func WithRetryBackoff(first, max time.Duration) ConsumerOption {
	return func(c *consumerConfig) error {
		if first <= 0 || max < first || max > 24*time.Hour {
			return fmt.Errorf("%w: WithRetryBackoff(%v, %v): want 0 < first <= max <= 24h", ErrInvalidOption, first, max)
		}
		c.retryFirst, c.retryMax = first, max
		return nil
	}
}

// WithLogger sets where failed handlers, poison messages (one record
// each, with at most 1 KiB of the body) and failed acks are logged
// (default: slog.Default()).
func WithLogger(logger *slog.Logger) ConsumerOption {
	return func(c *consumerConfig) error {
		if logger == nil {
			return fmt.Errorf("%w: WithLogger: logger must not be nil", ErrInvalidOption)
		}
		c.logger = logger
		return nil
	}
}

// WithMeterProvider sets the OpenTelemetry meter provider the consumer
// records its metrics with (default: the global one, otel.GetMeterProvider(),
// read in NewConsumer):
//
//   - passage.natsjs.consumer.poison (counter, {message}): messages
//     terminated because they were not the event their subject names,
//     with the attributes "consumer" (the durable name) and "reason" (a
//     PoisonReason: a fixed set), each recorded at zero in NewConsumer so
//     that the series exist before the first.
//
// With the API's no-op provider, or the global one while no SDK is
// installed, recording costs no allocation.
func WithMeterProvider(mp metric.MeterProvider) ConsumerOption {
	return func(c *consumerConfig) error {
		if mp == nil {
			return fmt.Errorf("%w: WithMeterProvider: meter provider must not be nil", ErrInvalidOption)
		}
		c.meters = mp
		return nil
	}
}

// backoff is the delay before the redelivery of a message delivered
// delivered times whose handlers failed.
func (c *consumerConfig) backoff(delivered uint64) time.Duration {
	d := c.retryFirst
	for i := uint64(1); i < delivered && d < c.retryMax; i++ {
		d *= 2
	}
	return min(d, c.retryMax)
}
