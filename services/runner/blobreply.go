package runner

import (
	"context"
	"fmt"

	"github.com/oklog/ulid/v2"

	"github.com/factline/factline/events"
)

// A model may say more than the bus takes in one message: a long answer,
// a write_file call with a huge content. Such a reply is still what the
// model said, and the run goes on with it; its largest parts are kept in
// blobs, which the fact names by digest (events.ModelReplied.Resolve), and
// the tool judges the arguments as it judges any others.

// fitReply returns the reply as it can be committed: while the fact would
// not fit a bus message, its largest part still in the fact (the text or
// one call's arguments) is stored as a blob and left out of the fact. The
// limit is the connected server's (bus.FactRoom), asked for each reply.
func (a *attempt) fitReply(ctx context.Context, r events.ModelReplied) (events.ModelReplied, error) {
	room := a.svc.bus.FactRoom()
	r.Calls = append([]events.ToolCall(nil), r.Calls...) // the caller's calls stay as they were
	for {
		size, err := a.factSize(r)
		if err != nil {
			return events.ModelReplied{}, err
		}
		if size <= room {
			return r, nil
		}
		// The largest part first: it alone is often enough, and the fact
		// keeps whatever fits.
		part, n := -1, len(r.Text)
		for i, c := range r.Calls {
			if len(c.Args) > n {
				part, n = i, len(c.Args)
			}
		}
		if n == 0 {
			return events.ModelReplied{}, fmt.Errorf("turn %d: model.replied is %d bytes with its text and arguments in blobs, over the bus's %d", r.Turn, size, room)
		}
		data := r.Text
		if part >= 0 {
			data = r.Calls[part].Args
		}
		d, err := a.svc.bus.Blobs().Put(ctx, []byte(data))
		if err != nil {
			return events.ModelReplied{}, fmt.Errorf("turn %d: store a reply part of %d bytes: %w", r.Turn, n, err)
		}
		a.keepBlob(d, data)
		what := "text"
		if part >= 0 {
			// ArgsDigest already names these bytes.
			r.Calls[part].Args = ""
			what = "arguments of call " + string(r.Calls[part].ID)
		} else {
			r.Text, r.TextDigest = "", d
		}
		a.svc.log.Info("reply part kept in a blob: the fact would not fit a bus message", "run", a.run, "turn", r.Turn,
			"part", what, "bytes", n, "blob", d, "room", room)
	}
}

// factSize is the encoded size of body as a fact of this run: the
// envelope's fields that vary (IDs, position, causation) are a few bytes,
// within the room bus.FactRoom leaves.
func (a *attempt) factSize(body events.Body) (int, error) {
	f, err := events.NewFact(events.Meta{Suite: a.suite, Run: a.run, TaskGeneration: max(a.gen, 1), Position: 1,
		Producer: events.Producer{Service: events.OwnerRunner, Instance: a.svc.instance}}, body)
	if err != nil {
		return 0, err
	}
	data, err := events.Encode(f)
	if err != nil {
		return 0, fmt.Errorf("measure %s: %w", body.Kind(), err)
	}
	return len(data), nil
}

// keepBlob remembers a reply part the attempt stored or read, so the
// history of every later turn does not read it again. Only parts of this
// run are kept, for the attempt's life: the history holds them anyway.
func (a *attempt) keepBlob(d events.Digest, data string) {
	a.blobMu.Lock()
	defer a.blobMu.Unlock()
	if a.blobParts == nil {
		a.blobParts = map[events.Digest]string{}
	}
	a.blobParts[d] = data
}

// blobPart reads a reply part kept in a blob.
func (a *attempt) blobPart(ctx context.Context) func(events.Digest) ([]byte, error) {
	return func(d events.Digest) ([]byte, error) {
		a.blobMu.Lock()
		s, ok := a.blobParts[d]
		a.blobMu.Unlock()
		if ok {
			return []byte(s), nil
		}
		data, err := a.svc.bus.Blobs().Get(ctx, d)
		if err != nil {
			return nil, err
		}
		a.keepBlob(d, string(data))
		return data, nil
	}
}

// resolveReplies returns facts with every model.replied whose parts were
// kept in blobs read back whole: what the model said, as the history, the
// calls and a delegation's answer need it. facts itself is not changed
// (the run's log is shared); a copy is made only when a reply needs it.
func (a *attempt) resolveReplies(ctx context.Context, facts []events.Fact) ([]events.Fact, error) {
	var out []events.Fact
	for i, f := range facts {
		r, ok := f.Body.(events.ModelReplied)
		if !ok || !r.InBlobs() {
			continue
		}
		if out == nil {
			out = append([]events.Fact(nil), facts...)
		}
		a.blobMu.Lock()
		full, ok := a.resolved[f.ID]
		a.blobMu.Unlock()
		if !ok {
			var err error
			if full, err = r.Resolve(a.blobPart(ctx)); err != nil {
				return nil, err
			}
			// A committed fact never changes: it is read back (and its
			// blobs checked against their digests) once per attempt.
			a.blobMu.Lock()
			if a.resolved == nil {
				a.resolved = map[ulid.ULID]events.ModelReplied{}
			}
			a.resolved[f.ID] = full
			a.blobMu.Unlock()
		}
		out[i].Body = full
	}
	if out == nil {
		return facts, nil
	}
	return out, nil
}

// resolveReply is resolveReplies for the one reply a turn's calls are
// settled from.
func (a *attempt) resolveReply(ctx context.Context, r *events.ModelReplied) (*events.ModelReplied, error) {
	if r == nil || !r.InBlobs() {
		return r, nil
	}
	full, err := r.Resolve(a.blobPart(ctx))
	if err != nil {
		return nil, err
	}
	return &full, nil
}
