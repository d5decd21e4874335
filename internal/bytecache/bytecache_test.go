package bytecache_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/bytecache"
)

func digest(i int) events.Digest { return events.DigestOf(fmt.Appendf(nil, "blob %d", i)) }

// Past its limit the cache drops its oldest entries first, and keeps
// within the limit.
func TestTheOldestGoFirst(t *testing.T) {
	c := bytecache.New(30, 30)
	for i := range 4 {
		c.Put(digest(i), bytes.Repeat([]byte{byte(i)}, 10))
	}
	if _, ok := c.Get(digest(0)); ok {
		t.Error("the oldest entry outlived three newer ones in a cache of three")
	}
	for i := 1; i < 4; i++ {
		if b, ok := c.Get(digest(i)); !ok || len(b) != 10 || b[0] != byte(i) {
			t.Errorf("entry %d: %v, %v", i, b, ok)
		}
	}
}

// An entry above the largest kept is not kept, and drops nothing.
func TestALargeEntryIsNotKept(t *testing.T) {
	c := bytecache.New(100, 25)
	c.Put(digest(1), make([]byte, 20))
	c.Put(digest(2), make([]byte, 26))
	if _, ok := c.Get(digest(2)); ok {
		t.Error("an entry above the largest was kept")
	}
	if _, ok := c.Get(digest(1)); !ok {
		t.Error("a large entry dropped a small one")
	}
}

// A digest names one content: putting it again keeps the first bytes.
func TestADigestIsKeptOnce(t *testing.T) {
	c := bytecache.New(100, 100)
	c.Put(digest(1), []byte("first"))
	c.Put(digest(1), []byte("second"))
	if b, _ := c.Get(digest(1)); string(b) != "first" {
		t.Errorf("got %q, want the first bytes kept", b)
	}
}
