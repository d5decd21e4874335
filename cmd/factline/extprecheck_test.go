package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A local run checks every extension its cases name against the
// allowlist before anything is submitted, as it checks container images:
// a case naming one the allowlist lacks, or whose pinned executable is
// not the file, is refused at once, naming the case, the extension and
// why, and the store is not even opened.
func TestALocalRunChecksTheExtensionAllowlistBeforeSubmitting(t *testing.T) {
	t.Parallel()
	caseYAML, err := os.ReadFile("../../examples/demo/cases/read-only/case.yaml")
	if err != nil {
		t.Fatal(err)
	}
	suite := writeSuite(t, map[string]string{
		"suite.yaml":            "name: ext\ncases:\n  - {path: cases/notes/case.yaml}\ntreatments:\n  - {path: treatments/fine.yaml}\ntrials: 1\n",
		"cases/notes/case.yaml": strings.Replace(string(caseYAML), "id: read-only", "id: notes", 1) + "extensions: [notes]\n",
		"treatments/fine.yaml":  "id: fine\nmodel: {provider: scripted, scripts: ../fine}\n",
		"fine/notes.yaml":       "turns:\n  - text: Release 2.4 uses port 9090 by default.\n",
	})
	if err := os.CopyFS(filepath.Join(filepath.Dir(suite), "cases/notes/fixture"), os.DirFS("../../examples/demo/cases/read-only/fixture")); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(t.TempDir(), "notes-server")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	wrongDigest := filepath.Join(t.TempDir(), "ext.yaml")
	if err := os.WriteFile(wrongDigest, []byte("extensions:\n  - name: notes\n    command: "+exe+"\n    digest: sha256:"+strings.Repeat("0", 64)+
		"\n    tools:\n      - {name: search, effect: read}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "notes: not_allowlisted"},
		{[]string{"--extensions", wrongDigest}, "notes: digest_mismatch"},
	} {
		store := t.TempDir()
		args := append([]string{"run", suite, "--store", store, "--fsync", "interval"}, c.args...)
		code, out, errOut := runCLI(t, args...)
		if code != 1 || !strings.Contains(errOut, "case notes") || !strings.Contains(errOut, c.want) ||
			!strings.Contains(errOut, "nothing was submitted") || !strings.Contains(errOut, "--extensions") {
			t.Errorf("factline %v: exit %d, stderr %q; want exit 1 naming case notes, %q, that nothing was submitted and --extensions", args, code, errOut, c.want)
		}
		if strings.Contains(out, "runs:") {
			t.Errorf("factline %v ran before refusing:\n%s", args, out)
		}
		// The check comes before the store is even opened.
		if code, _, errOut := runCLI(t, "report", "ext", "--store", store); code != 1 || !strings.Contains(errOut, "no store at") {
			t.Errorf("after the refusal the store holds the suite: exit %d, %q", code, errOut)
		}
	}
}
