package grader_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/events"
	"github.com/factline/factline/sandbox"
	"github.com/factline/factline/sandbox/sandboxtest"
	"github.com/factline/factline/services/grader"
)

// publishIn stores a case whose commands run in the environment env
// (pinned to digest, as publishing a suite pins it) with the grading
// YAML, and returns run.requested for it.
func (e *env) publishIn(env string, digest events.Digest, grading string) events.RunRequested {
	e.t.Helper()
	c, err := cases.ParseCase("case.yaml", []byte("id: fix\ninstruction: make check.sh pass\n"+env+grading))
	must(e.t, err)
	c.Environment.ImageDigest = digest
	c.FixtureDigest = e.store(fixtureFiles)
	tr, err := cases.ParseTreatment("t.yaml", []byte("id: actor\nmodel: {provider: openai, name: actor-model}\n"))
	must(e.t, err)
	cd, _ := c.Encode()
	td, _ := tr.Encode()
	req := events.RunRequested{Case: c.ID, Treatment: tr.ID, Trial: 1}
	req.CaseDigest, err = e.b.Blobs().Put(e.ctx, cd)
	must(e.t, err)
	req.TreatmentDigest, err = e.b.Blobs().Put(e.ctx, td)
	must(e.t, err)
	return req
}

// gradingContainers lists the engine's containers of command instruments
// of one run.
func gradingContainers(t *testing.T, run string) []string {
	t.Helper()
	e := sandbox.EngineFromEnv()
	out, err := e.RemoveContainers(context.Background(), map[string]string{grader.LabelGrading: "true", sandbox.LabelRun: run, sandbox.LabelSuite: suite})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Must show: the grader's checks run in the case's image, on the sealed
// candidate. The image is the one the stored case pins by digest, which
// a candidate cannot change: a forged marker in its workspace changes
// nothing. Every command gets a fresh container (what one check left
// outside the workspace is not there for the next), its grade.instrument
// records the container and the image's digest, and no container is left.
func TestCommandInstrumentsRunInTheCaseImage(t *testing.T) {
	e := start(t)
	image := sandboxtest.Image(t, "plain")
	digest, err := sandbox.EngineFromEnv().ResolveImage(e.ctx, image)
	must(t, err)
	g := e.grader(grader.WithWorkDir(reachableDir(t)), grader.WithContainment(sandbox.Config{Limits: testLimits, Network: true, Unprivileged: true}))
	grading := "grading:\n  instruments:\n" +
		"    - {id: image, kind: command, command: 'test \"$(cat " + sandboxtest.ImageMarker + ")\" = plain && grep -qx 4 answer.txt'}\n" +
		"    - {id: leave, kind: command, command: 'echo left > /tmp/leftover'}\n" +
		"    - {id: fresh, kind: command, command: '! test -e /tmp/leftover'}\n" +
		"    - {id: host, kind: command, command: 'test -e " + reachableDir(t) + "', expect_exit: 1}\n"
	req := e.publishIn("environment: {image: \""+image+"\", memory: 128MiB}\n", digest, grading)
	// The candidate forges the marker in its workspace, and names another
	// image wherever it can: the grader never reads them.
	e.attempt("in-image", req, candidate(map[string]string{"answer.txt": "4\n",
		"etc/factline-test-image": "forged\n", "environment.yaml": "image: localhost/evil:1\n"}))
	must(t, g.Grade(e.ctx, suite, "in-image"))

	v := e.verdict("in-image")
	for _, id := range []events.InstrumentID{"image", "leave", "fresh", "host"} {
		if r := result(v, id); r.Outcome != events.InstrumentPassed {
			t.Errorf("%s: %s (%s)", id, r.Outcome, r.Detail)
		}
	}
	for id, gi := range e.instrumentFacts("in-image") {
		c := gi.Containment
		if c == nil || c.Provider != "container" || c.Image == nil || c.Image.Digest != digest {
			t.Errorf("%s records %+v, want the container of %s", id, c, digest)
			continue
		}
		if f, _ := c.Feature(sandbox.FeatureMemory); f.State != events.ContainmentActive || f.Limit != 128<<20 {
			t.Errorf("%s: memory %+v", id, f)
		}
	}
	if left := gradingContainers(t, "in-image"); len(left) > 0 {
		t.Errorf("containers left after grading: %v", left)
	}
}

// A stored case that pins an image this grader's engine does not hold
// leaves its command instruments errored, naming the image: the attempt
// is pending, never failed.
func TestACommandInAMissingImageIsErrored(t *testing.T) {
	e := start(t)
	g := e.grader(grader.WithWorkDir(reachableDir(t)))
	missing := events.Digest("sha256:" + strings.Repeat("0", 64))
	req := e.publishIn("environment: {image: localhost/gone:1}\n", missing, fmt.Sprintf(testsInstrument, ""))
	e.attempt("gone", req, candidate(map[string]string{"answer.txt": "4\n"}))
	must(t, g.Grade(e.ctx, suite, "gone"))
	v := e.verdict("gone")
	if r := result(v, "tests"); r.Outcome != events.InstrumentErrored || !strings.Contains(r.Detail, "localhost/gone:1") {
		t.Fatalf("tests: %s (%s), want errored naming the image", r.Outcome, r.Detail)
	}
	if v.Result.Type() == "failed" {
		t.Fatalf("verdict %s: a missing image is no failure of the candidate", v.Result.Type())
	}
}
