package httpmodel

import (
	"fmt"
	"io"
	"net/http"
)

// DefaultMaxReplyBytes bounds the body of a provider's answer when a
// configuration sets no bound. A reply of a few hundred thousand output
// tokens is a few megabytes; the bound is well past any real one and
// keeps a runaway or hostile endpoint from filling the runner's memory.
const DefaultMaxReplyBytes = 32 << 20

// ReplyTooLargeError is the error reading a provider's answer fails with
// once it passes its bound.
type ReplyTooLargeError struct{ Limit int64 }

func (e *ReplyTooLargeError) Error() string {
	return fmt.Sprintf("the provider's answer is over the %d-byte limit on a reply body (max reply bytes)", e.Limit)
}

// BoundReplies returns a client that sends as c does and whose response
// bodies fail with *ReplyTooLargeError after limit bytes (0 or less:
// DefaultMaxReplyBytes). c is not changed.
func BoundReplies(c *http.Client, limit int64) *http.Client {
	if limit <= 0 {
		limit = DefaultMaxReplyBytes
	}
	bounded := *c
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	bounded.Transport = boundedTransport{next: next, limit: limit}
	return &bounded
}

type boundedTransport struct {
	next  http.RoundTripper
	limit int64
}

func (t boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if resp.ContentLength > t.limit {
		// Said up front: nothing of it need be read.
		_ = resp.Body.Close()
		resp.Body = io.NopCloser(errReader{&ReplyTooLargeError{Limit: t.limit}})
		return resp, nil
	}
	resp.Body = &boundedBody{ReadCloser: resp.Body, left: t.limit, limit: t.limit}
	return resp, nil
}

// boundedBody reads at most left bytes of a body; a body that has more
// fails with *ReplyTooLargeError instead of being cut short silently.
type boundedBody struct {
	io.ReadCloser
	left  int64
	limit int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly the limit from a longer one.
		var one [1]byte
		n, err := b.ReadCloser.Read(one[:])
		if n > 0 {
			return 0, &ReplyTooLargeError{Limit: b.limit}
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }
