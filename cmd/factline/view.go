package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/factline/factline/view"
)

// defaultViewListen is where the viewer listens unless told otherwise:
// loopback, so that the log is shown to this machine only.
const defaultViewListen = "127.0.0.1:7070"

// newViewCmd serves the web viewer of a store, a server or an export file.
func newViewCmd() *cobra.Command {
	var o viewFlags
	c := newCommand("view", noArgs)
	fs := o.src.flags(c, o.run, "an export file to show instead of a store or a server (it does not change; a version 3 export holds the blobs its facts name)")
	fs.StringVar(&o.listen, "listen", defaultViewListen, "serve the pages at PORT or :PORT (this machine only) or HOST:PORT (port 0 picks a free one)")
	fs.BoolVar(&o.allowRemote, "allow-remote", false, "with --listen: allow an address other hosts can reach (0.0.0.0, a LAN address); whoever reaches it reads every fact, and the traffic is not encrypted")
	fs.StringSliceVar(&o.hosts, "allow-host", nil, "a host name the pages also answer to (the Host header browsers send), besides 127.0.0.1, localhost, [::1] and --listen's host; for a wildcard --listen reached by name")
	return c
}

// viewFlags are view's flags.
type viewFlags struct {
	src         logSource
	listen      string
	allowRemote bool
	hosts       []string
}

func (o *viewFlags) run(ctx context.Context, _ []string, out, errOut io.Writer) error {
	addr, err := parseListen(o.listen)
	if err != nil {
		return err
	}
	if !addr.loopback && !o.allowRemote {
		return addr.refuseRemote(o.listen, "whoever reaches it reads every fact")
	}
	// The pages answer to the names this machine's loopback has and to
	// the ones given, nothing else: a page elsewhere that rebinds its own
	// name to this address is refused (docs/viewer.md#listening-and-host-names).
	t := &o.src.t
	cfg := view.Config{Hosts: append([]string{addr.given}, o.hosts...)}
	var source string
	if file, err := o.src.fromFile(ctx); err != nil {
		return err
	} else if file {
		// For --file -, the copy of standard input (fromFile).
		if err := o.src.checkFile(); err != nil {
			return err
		}
		cfg.File, source = o.src.file, o.src.name()
	} else {
		b, closeBus, err := t.readsExisting().open(ctx)
		if err != nil {
			return err
		}
		defer closeBus()
		cfg.Bus = b
		source = "--store " + t.store
		if t.url != "" {
			source = "--nats " + redactURL(t.url)
		}
	}
	s, err := view.New(cfg)
	if err != nil {
		return err
	}
	if err := s.Load(ctx); err != nil {
		return err
	}
	l, err := net.Listen("tcp", addr.String())
	if err != nil {
		return listenError("--listen", o.listen, err)
	}
	if !addr.loopback {
		fmt.Fprintf(errOut, "warning: serving the log on %s, beyond this machine: whoever reaches it reads every fact\n", l.Addr())
	}
	fmt.Fprintf(out, "factline view: http://%s/ (%s)\n", l.Addr(), source)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	feed := make(chan error, 1)
	go func() { feed <- s.Run(ctx) }()
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	select {
	case err = <-served:
		cancel()
		<-feed
	case err = <-feed:
		_ = srv.Close()
		<-served
	case <-ctx.Done():
		// Open event streams end with the context they were served under.
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		_ = srv.Shutdown(sctx)
		<-served
		err = <-feed
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve the pages: %w", err)
	}
	return nil
}
