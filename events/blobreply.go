package events

import (
	"fmt"
	"sync"
)

// A model.replied fact too large for one bus message keeps its largest
// parts in blobs and names them by digest: the text as Text "" with
// TextDigest set, a call's arguments as Args "" with ArgsDigest (always
// the digest of the arguments) naming a non-empty text. Readers that show
// or replay what the model said resolve them (ModelReplied.Resolve).

// emptyDigest is the digest of no bytes: the ArgsDigest of a call with no
// arguments, which names nothing to fetch.
var emptyDigest = sync.OnceValue(func() Digest { return DigestOf(nil) })

// ArgsInBlob reports whether the call's arguments were moved to the blob
// named by ArgsDigest.
func (c ToolCall) ArgsInBlob() bool {
	return c.Args == "" && c.ArgsDigest != "" && c.ArgsDigest != emptyDigest()
}

// TextInBlob reports whether the reply's text was moved to the blob named
// by TextDigest.
func (b ModelReplied) TextInBlob() bool { return b.Text == "" && b.TextDigest != "" }

// InBlobs reports whether any part of the reply was moved to a blob.
func (b ModelReplied) InBlobs() bool {
	if b.TextInBlob() {
		return true
	}
	for _, c := range b.Calls {
		if c.ArgsInBlob() {
			return true
		}
	}
	return false
}

// Resolve returns the reply with every part that was moved to a blob read
// back in with get, which must return the bytes a digest names (checked
// here against the digest). The reply itself is not changed: its Calls
// are copied before one is filled in. TextDigest is kept, so a resolved
// reply still says where its text is stored.
func (b ModelReplied) Resolve(get func(Digest) ([]byte, error)) (ModelReplied, error) {
	if !b.InBlobs() {
		return b, nil
	}
	fetch := func(what string, d Digest) (string, error) {
		data, err := get(d)
		if err != nil {
			return "", fmt.Errorf("turn %d's %s in blob %s: %w", b.Turn, what, d, err)
		}
		if got := DigestOf(data); got != d {
			return "", fmt.Errorf("turn %d's %s in blob %s: the blob holds %s", b.Turn, what, d, got)
		}
		return string(data), nil
	}
	if b.TextInBlob() {
		text, err := fetch("text", b.TextDigest)
		if err != nil {
			return ModelReplied{}, err
		}
		b.Text = text
	}
	calls := make([]ToolCall, len(b.Calls))
	copy(calls, b.Calls)
	for i, c := range calls {
		if !c.ArgsInBlob() {
			continue
		}
		args, err := fetch(fmt.Sprintf("arguments of call %s", c.ID), c.ArgsDigest)
		if err != nil {
			return ModelReplied{}, err
		}
		calls[i].Args = args
	}
	b.Calls = calls
	return b, nil
}
