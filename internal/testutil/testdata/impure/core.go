package core

import (
	"os"

	"github.com/nats-io/nats.go"
)

var _ = os.Getenv
var _ = nats.Connect
