package bus_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/events"
)

// BenchmarkExportBigBlob exports, reads and imports a store whose one fact
// names a 32 MiB request, and reports the bytes each allocates per blob
// byte: a reader that hashes the parts as they pass allocates a few parts,
// not the blob; one that keeps the blob (import, BlobData) about the blob
// once. go test -run '^$' -bench ExportBigBlob -benchtime 3x ./bus/
func BenchmarkExportBigBlob(b *testing.B) {
	ctx := testCtxTB(b)
	src, _ := bustest.Start(b)
	big := bytes.Repeat([]byte("0123456789abcdef"), 2<<20) // 32 MiB
	d, err := src.Blobs().Put(ctx, big)
	if err != nil {
		b.Fatal(err)
	}
	f, err := events.NewFact(events.Meta{Suite: "s", Run: "r1", TaskGeneration: 1, Position: 1,
		Producer: events.Producer{Service: events.OwnerRunner, Instance: "t"}}, events.TurnStarted{Turn: 1, ContextDigest: d, Messages: 1})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := src.Append(ctx, bus.Expect{}, bus.Pending{Fact: f}); err != nil {
		b.Fatal(err)
	}
	var file bytes.Buffer
	if _, err := src.ExportWithBlobs(ctx, &file, bus.ReadOptions{}); err != nil {
		b.Fatal(err)
	}
	size := float64(len(big))
	for _, c := range []struct {
		name string
		run  func() error
	}{
		{"export", func() error { _, err := src.ExportWithBlobs(ctx, io.Discard, bus.ReadOptions{}); return err }},
		{"read", func() error {
			return bus.ReadExport(bytes.NewReader(file.Bytes()), func(bus.Raw) error { return nil })
		}},
		{"read-keep", func() error {
			_, err := bus.ReadExportWith(bytes.NewReader(file.Bytes()), bus.ExportVisitor{BlobData: true, Blob: func(bus.ExportBlob) error { return nil }})
			return err
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for range b.N {
				if err := c.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
