package bus

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/factline/factline/events"
)

// SendControl publishes a control signal for a run on the CONTROL stream.
// It is only a request: the run's runner decides whether and when to accept
// it, and commits control.accepted when it does.
func (b *Bus) SendControl(ctx context.Context, suite, run string, c events.Control) error {
	if c.ID == "" {
		c.ID = events.NewID().String()
	}
	if err := c.Validate(); err != nil {
		return fmt.Errorf("control: %w", err)
	}
	subj, err := events.ControlSubject(suite, run, c.Signal)
	if err != nil {
		return fmt.Errorf("control: %w", err)
	}
	data, _ := json.Marshal(c)
	if _, err := b.js.Publish(ctx, subj, data, jetstream.WithMsgID(c.ID)); err != nil {
		return fmt.Errorf("send %s to %s/%s: %w", c.Signal, suite, run, err)
	}
	return nil
}

// WatchControls delivers the control signals of one run, from the oldest
// the CONTROL stream still holds, until ctx ends. Messages that are not
// valid signals are logged and skipped. The returned channel closes when
// the watch ends.
func (b *Bus) WatchControls(ctx context.Context, suite, run string) (<-chan events.Control, error) {
	cons, err := b.js.OrderedConsumer(ctx, ControlStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{events.ControlPrefix + "." + suite + "." + run + ".*"},
	})
	if err != nil {
		return nil, fmt.Errorf("watch controls of %s/%s: %w", suite, run, err)
	}
	out := make(chan events.Control, 16)
	cc, err := cons.Consume(func(m jetstream.Msg) {
		c, err := events.DecodeControl(m.Data())
		if err != nil {
			b.log.Warn("ignoring a bad control signal", "subject", m.Subject(), "err", err)
			return
		}
		select {
		case out <- c:
		case <-ctx.Done():
		}
	})
	if err != nil {
		return nil, fmt.Errorf("watch controls of %s/%s: %w", suite, run, err)
	}
	go func() {
		<-ctx.Done()
		cc.Stop()
		<-cc.Closed()
		b.dropOrdered(ControlStream, cons)
		close(out)
	}()
	return out, nil
}

// PublishStatus publishes a run's live status (heartbeat, phase, progress)
// on status.<suite>.<run>. Status may vanish; nothing is rebuilt from it.
func (b *Bus) PublishStatus(suite, run string, status any) error {
	subj, err := events.StatusSubject(suite, run)
	if err != nil {
		return err
	}
	data, err := json.Marshal(status)
	if err != nil {
		return err
	}
	// Fire and forget: a lost heartbeat costs nothing.
	return b.nc.PublishMsg(&nats.Msg{Subject: subj, Data: data})
}
