package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/factline/factline/bus"
)

// runSetup creates factline's streams and buckets on a server, as an
// identity allowed to manage streams (the admin role). Services connected
// with their own roles only look the streams up; on an account nobody has
// set up they refuse to start. An existing FACTS stream made before the
// log was append-only is reported, and changed only with --append-only.
func runSetup(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("setup", "setup (--nats URL [--replicas N] [credentials] | --store DIR --append-only) [--append-only]", out)
	var t target
	t.flags(fs)
	appendOnly := fs.Bool("append-only", false, "add deny_delete and deny_purge to an existing FACTS stream that lacks them (the server never lets them be removed)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if t.url == "" && !(t.store != "" && *appendOnly) {
		return usageError{"setup works on a NATS server: --nats URL (an embedded --store sets itself up; --store DIR --append-only makes an old store's log append-only)"}
	}
	b, closeBus, err := t.open(ctx)
	if err != nil {
		return err
	}
	defer closeBus()
	fmt.Fprintf(out, "streams %s, %s, %s and buckets %s, %s are set up (replicas %d)\n",
		bus.FactsStream, bus.ControlStream, bus.DeadStream, bus.BlobBucket, bus.PositionsBucket, t.replicas)
	err = b.CheckAppendOnly(ctx)
	var na *bus.NotAppendOnlyError
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &na):
		return err
	case !*appendOnly:
		fmt.Fprintf(out, "warning: %v\n", na)
		return nil
	}
	if err := b.MakeAppendOnly(ctx); err != nil {
		return err
	}
	fmt.Fprintf(out, "stream %s is now append-only (deny_delete, deny_purge): its messages can no longer be deleted or purged\n", bus.FactsStream)
	return nil
}
