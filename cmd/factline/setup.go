package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/factline/factline/bus"
)

// newSetupCmd creates factline's streams and buckets on a server, as an
// identity allowed to manage streams (the admin role). Services connected
// with their own roles only look the streams up; on an account nobody has
// set up they refuse to start. An existing FACTS stream made before the
// log was append-only is reported, and changed only with --append-only; one
// made before stored decisions were announced gets the announcement, which
// changes no message and no meaning.
func newSetupCmd() *cobra.Command {
	var t target
	var appendOnly, compress bool
	c := newCommand("setup", noArgs)
	c.RunE = func(c *cobra.Command, _ []string) error {
		var comp *bool
		if c.Flags().Changed("compress") {
			comp = &compress
			t.compressFacts = compress
		}
		return runSetup(c.Context(), &t, appendOnly, comp, c.OutOrStdout())
	}
	t.flags(c.Flags())
	c.Flags().BoolVar(&appendOnly, "append-only", false, "add deny_delete and deny_purge to an existing FACTS stream that lacks them (the server never lets them be removed)")
	c.Flags().BoolVar(&compress, "compress", false, "store FACTS' sealed blocks S2-compressed: a fraction of the disk, a slower first read of an old run (docs/operations.md); a new FACTS compresses at once, an existing one once its server opens the store again; --compress=false turns it off")
	return c
}

func runSetup(ctx context.Context, t *target, appendOnly bool, compress *bool, out io.Writer) error {
	if t.url == "" && !(t.store != "" && (appendOnly || compress != nil)) {
		return usageError{"setup works on a NATS server: --nats URL (an embedded --store sets itself up; --store DIR --append-only makes an old store's log append-only, --store DIR --compress compresses it)"}
	}
	b, closeBus, err := t.open(ctx)
	if err != nil {
		return err
	}
	defer closeBus()
	// Opening only looks up streams that exist: an identity that may not
	// manage them got this far on a set-up account, and setup ended 0
	// having changed nothing.
	if err := t.mayManageStreams(ctx, b); err != nil {
		return err
	}
	// The response cache's bucket is otherwise made on first use, which a
	// runner's identity may not do.
	if err := b.Responses().Ensure(ctx); err != nil {
		return err
	}
	fmt.Fprintf(out, "streams %s, %s, %s and buckets %s, %s, %s, %s are set up (replicas %d)\n",
		bus.FactsStream, bus.ControlStream, bus.DeadStream, bus.BlobBucket, bus.PositionsBucket, bus.CacheBucket, bus.LimitsBucket, t.replicas)
	if compress != nil {
		if err := setCompression(ctx, b, *compress, out); err != nil {
			return err
		}
	}
	switch added, err := b.AnnounceStoredDecisions(ctx); {
	case err != nil:
		fmt.Fprintf(out, "warning: %v\n", err)
	case added:
		fmt.Fprintf(out, "stream %s now announces each stop decision once stored (on %s.fact.<suite>.<run>.stop.decided): runners opened from now on wake on it\n", bus.FactsStream, bus.StoredPrefix)
	}
	switch added, err := b.AllowAtomicBatches(ctx); {
	case err != nil:
		fmt.Fprintf(out, "warning: %v\n", err)
	case added:
		fmt.Fprintf(out, "stream %s now takes atomic batches (allow_atomic): on replicated streams a decision of several facts commits as one, from the next open\n", bus.FactsStream)
	}
	err = b.CheckAppendOnly(ctx)
	var na *bus.NotAppendOnlyError
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &na):
		return err
	case !appendOnly:
		fmt.Fprintf(out, "warning: %v\n", na)
		return nil
	}
	if err := b.MakeAppendOnly(ctx); err != nil {
		return err
	}
	fmt.Fprintf(out, "stream %s is now append-only (deny_delete, deny_purge): its messages can no longer be deleted or purged\n", bus.FactsStream)
	return nil
}

// setCompression sets FACTS' block compression and says when it applies.
func setCompression(ctx context.Context, b *bus.Bus, on bool, out io.Writer) error {
	changed, err := b.CompressFacts(ctx, on)
	if err != nil {
		return err
	}
	state := "S2-compressed"
	if !on {
		state = "uncompressed"
	}
	if !changed {
		fmt.Fprintf(out, "stream %s stores its sealed blocks %s\n", bus.FactsStream, state)
		return nil
	}
	fmt.Fprintf(out, "stream %s is set to store its sealed blocks %s: a server applies it to the blocks it seals once it opens the store again (restart the servers; an embedded store, from the next command on)\n", bus.FactsStream, state)
	return nil
}
