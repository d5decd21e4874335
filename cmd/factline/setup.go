package main

import (
	"context"
	"fmt"
	"io"

	"github.com/factline/factline/bus"
)

// runSetup creates factline's streams and buckets on a server, as an
// identity allowed to manage streams (the admin role). Services connected
// with their own roles only look the streams up; on an account nobody has
// set up they refuse to start.
func runSetup(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("setup", "setup --nats URL [--replicas N] [credentials]", out)
	var t target
	t.flags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if t.url == "" {
		return usageError{"setup works on a NATS server: --nats URL (an embedded --store sets itself up)"}
	}
	_, closeBus, err := t.open(ctx)
	if err != nil {
		return err
	}
	defer closeBus()
	fmt.Fprintf(out, "streams %s, %s, %s and buckets %s, %s are set up (replicas %d)\n",
		bus.FactsStream, bus.ControlStream, bus.DeadStream, bus.BlobBucket, bus.PositionsBucket, t.replicas)
	return nil
}
