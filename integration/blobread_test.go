package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Every role reads blobs (docs/security.md), and a client reads a chunked
// object by an ordered consumer on its chunk subject. A pull consumer is
// what JetStream clients make today (nats.go's jetstream package, the npm
// `nats` client's consumers.get): the roles must let it pull, not only
// create it, or an analyst's reader in another language cannot read a
// request blob of more than one message at all.
func TestEveryRoleReadsAChunkedBlobWithAPullConsumer(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 2*time.Minute)
	_, url := roleServer(t, "factline.conf")
	admin, _ := openAs(t, ctx, url, "FACTLINE", "admin") // sets the streams up
	objects, err := admin.JetStream().ObjectStore(ctx, "BLOBS")
	if err != nil {
		t.Fatalf("admin opens BLOBS: %v", err)
	}
	want := make([]byte, 300<<10) // three chunks of the object store's 128 KiB
	if _, err := rand.Read(want); err != nil {
		t.Fatal(err)
	}
	info, err := objects.PutBytes(ctx, "chunked-blob", want)
	if err != nil {
		t.Fatalf("admin puts a blob: %v", err)
	}
	if info.Chunks < 2 {
		t.Fatalf("the blob is %d chunk(s), want several", info.Chunks)
	}
	for _, role := range roles[1:] {
		t.Run(role, func(t *testing.T) {
			nc, refused := connectAs(t, url, "FACTLINE", role)
			js, err := jetstream.New(nc)
			if err != nil {
				t.Fatal(err)
			}
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			cons, err := js.OrderedConsumer(rctx, "OBJ_BLOBS", jetstream.OrderedConsumerConfig{FilterSubjects: []string{"$O.BLOBS.C." + info.NUID}})
			if err != nil {
				t.Fatalf("%s makes an ordered consumer on the blob's chunks: %v (refused %v)", role, err, refused.list())
			}
			var got []byte
			for i := range int(info.Chunks) {
				msg, err := cons.Next(jetstream.FetchMaxWait(2 * time.Second))
				if err != nil {
					t.Fatalf("%s pulls chunk %d of %d: %v (refused %v)", role, i+1, info.Chunks, err, refused.list())
				}
				got = append(got, msg.Data()...)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s read %d bytes, want the blob's %d", role, len(got), len(want))
			}
			if r := refused.list(); len(r) > 0 {
				t.Fatalf("%s was refused %v while reading a blob", role, r)
			}
		})
	}
}
