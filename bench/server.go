package bench

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/nats-io/nats.go"

	"github.com/factline/factline/bus"
)

// server is the embedded JetStream server a part of the benchmark runs on,
// with a bus over an in-process connection.
type server struct {
	srv *bus.Embedded
	nc  *nats.Conn
	b   *bus.Bus
}

// startServer starts an embedded server on dir with the given durability.
// With listen it also serves TCP clients on a free loopback port, for the
// service processes of B6.
func startServer(ctx context.Context, dir string, mode bus.Durability, listen bool, logger *slog.Logger) (*server, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg := bus.EmbeddedConfig{StoreDir: dir, Durability: mode}
	if listen {
		cfg.Listen = "127.0.0.1:-1"
	}
	srv, err := bus.StartEmbedded(ctx, cfg)
	if err != nil {
		return nil, err
	}
	nc, err := srv.Connect()
	if err != nil {
		srv.Shutdown()
		return nil, err
	}
	b, err := bus.Open(ctx, nc, bus.Config{Logger: logger})
	if err != nil {
		nc.Close()
		srv.Shutdown()
		return nil, fmt.Errorf("open bus: %w", err)
	}
	return &server{srv: srv, nc: nc, b: b}, nil
}

func (s *server) close() {
	s.nc.Close()
	s.srv.Shutdown()
}

// connect opens another in-process connection, so that a baseline and
// factline do not share one connection's write path unequally.
func (s *server) connect() (*nats.Conn, error) { return s.srv.Connect() }
