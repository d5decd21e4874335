package suites

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/bus/bustest"
	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/sandbox"
	"github.com/factline/factline/sandbox/sandboxtest"
)

// envCase is a case whose environment names image.
func envCase(t *testing.T, image string) *cases.Case {
	t.Helper()
	c, err := cases.ParseCase("c.yaml", []byte("id: tool\ninstruction: x\nenvironment: {image: \""+image+"\", memory: 256MiB}\n"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Publishing pins the image by digest: the digest, not the tag, is part
// of the case digest and of the agent identity, so another image under
// the same case text is another case and another agent (the meter's
// comparison names the environment), while the same image under another
// tag is the same. A case without an environment has no such component.
func TestImageDigestIsPartOfTheIdentity(t *testing.T) {
	b, _ := bustest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	plain, other := sandboxtest.Image(t, "plain"), sandboxtest.Image(t, "other")
	tr, err := cases.ParseTreatment("t.yaml", []byte("id: t\nmodel: {provider: openai, name: m}\n"))
	if err != nil {
		t.Fatal(err)
	}
	publish := func(image string) (*cases.Case, string, []events.Component) {
		c := envCase(t, image)
		ref, err := PublishCase(ctx, b.Blobs(), c)
		if err != nil {
			t.Fatal(err)
		}
		id, comps, err := AgentIdentity(c, tr)
		if err != nil {
			t.Fatal(err)
		}
		return c, string(ref.Digest) + " " + string(id), comps
	}
	c1, d1, comps1 := publish(plain)
	want, err := sandbox.EngineFromEnv().ResolveImage(ctx, plain)
	if err != nil || c1.Environment.ImageDigest != want {
		t.Fatalf("published digest %s, the engine says %s (%v)", c1.Environment.ImageDigest, want, err)
	}
	_, d2, comps2 := publish(other)
	if strings.Fields(d1)[0] == strings.Fields(d2)[0] || strings.Fields(d1)[1] == strings.Fields(d2)[1] {
		t.Fatalf("another image left the case digest or the identity as it was: %s / %s", d1, d2)
	}
	if got := measureDiff(comps1, comps2); got != ComponentEnvironment {
		t.Fatalf("the identities differ in %q, want only %s", got, ComponentEnvironment)
	}
	// The same image named by its ID is the same agent.
	_, d3, _ := publish(string(want))
	if strings.Fields(d3)[1] != strings.Fields(d1)[1] {
		t.Fatal("the same image under another name changed the identity")
	}
	plainCase, _ := cases.ParseCase("c.yaml", []byte("id: tool\ninstruction: x\n"))
	_, comps, _ := AgentIdentity(plainCase, tr)
	for _, cp := range comps {
		if cp.Name == ComponentEnvironment {
			t.Fatal("a case without an environment has an environment component")
		}
	}
}

// An image the engine does not hold is a clear error when the suite is
// published, before anything is submitted or any run requested.
func TestAMissingImageFailsPublication(t *testing.T) {
	b, _ := bustest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := PublishCase(ctx, b.Blobs(), envCase(t, "localhost/factline-no-such-image:1"))
	var ie *sandbox.ImageError
	if !errors.As(err, &ie) || !errors.Is(err, sandbox.ErrImageMissing) ||
		!strings.Contains(err.Error(), `case tool: environment: environment image "localhost/factline-no-such-image:1": not found`) {
		t.Fatalf("got %v", err)
	}
}
