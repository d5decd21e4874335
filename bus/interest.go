package bus

import (
	"errors"
	"time"

	"github.com/nats-io/nats.go"
)

// consumerInterestWait is how long after making (or looking up) a
// consumer a pull answered "no responders" is pulled again in place, every
// consumerInterestPause, rather than counted as an interruption: a
// client's node learns of a consumer whose leader is on another node a
// moment after the create is answered. On a healthy three-node cluster one
// control watch in ten met it
// (TestControlWatchesOnAHealthyClusterWarnOfNothing), and 25 of 30
// service consumers pulling on demand started beside others, whose
// fetches are made again at once and so failed four times within
// milliseconds (TestServiceConsumersOnAHealthyClusterWarnOfNothing).
const (
	consumerInterestWait  = time.Second
	consumerInterestPause = 50 * time.Millisecond
)

// freshConsumer follows a consumer just made or looked up until a pull of
// it is answered, to tell its node's late news of it from an interruption.
// It is used by one pulling goroutine.
type freshConsumer struct {
	made     time.Time
	answered bool
}

// newFresh starts following a consumer made or looked up now.
func newFresh() *freshConsumer { return &freshConsumer{made: time.Now()} }

// unknownYet says whether a pull's error is "no responders" from a node
// that does not know yet of the consumer just made on another node (its
// subscription's interest crosses the routes a moment after the create is
// answered): no pull was answered yet, and it is within
// consumerInterestWait of the consumer's making. Pulled again then, it is
// no interruption; later, or once a pull was answered, it is one (the node
// holding the consumer is gone).
func (f *freshConsumer) unknownYet(err error) bool {
	return !f.answered && errors.Is(err, nats.ErrNoResponders) && time.Since(f.made) < consumerInterestWait
}

// answer records that a pull was answered (a message, or a pull that
// waited its time out): the client's node knows the consumer.
func (f *freshConsumer) answer() { f.answered = true }
