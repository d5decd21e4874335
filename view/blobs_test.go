package view_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/view"
)

// A blob whose name a put left without its chunks is a page that says so,
// at once: not "no such blob", which would send an operator looking for a
// digest the store does name, and not a read that waits for chunks.
func TestBlobPageOfANameWithoutChunksSaysItsBytesAreMissing(t *testing.T) {
	ctx := testCtx(t)
	b := openTestStore(ctx, t, t.TempDir())
	data := bytes.Repeat([]byte("a workspace file of several chunks\n"), 10000)
	d, err := b.Blobs().Put(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	// What the object store's purgePartial does to a put whose answer
	// was lost after its metadata message was stored.
	bustest.BreakBlob(ctx, t, b.Conn(), d)
	_, h := serve(t, view.Config{Bus: b})
	code, body := get(t, h.URL+"/blobs/"+d.Hex())
	if code != http.StatusNotFound || !strings.Contains(body, "its bytes are missing") || !strings.Contains(body, d.Hex()) {
		t.Fatalf("status %d, page:\n%s", code, body)
	}
}
