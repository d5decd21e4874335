package version

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// HarnessOf is the harness component of an agent identity: the build that
// runs (module, version, VCS revision, whether the tree was dirty, the
// toolchain) and the digest of what shapes the harness's behaviour beyond
// its code (tool contracts, context, stall, stop and permission policy,
// containment), each part named and given as its canonical JSON. Two
// builds, or one build under two behaviours, never share it; a hand-bumped
// constant could not promise that. A build without a VCS stamp (go test,
// go run) says so by an empty revision.
func HarnessOf(b Build, behaviour map[string]json.RawMessage) (string, error) {
	part := struct {
		Module    string `json:"module,omitempty"`
		Version   string `json:"version"`
		Revision  string `json:"revision,omitempty"`
		Modified  bool   `json:"modified,omitempty"`
		Go        string `json:"go,omitempty"`
		Behaviour string `json:"behaviour,omitempty"`
	}{Module: b.Module, Version: b.Version, Revision: b.Revision, Modified: b.Modified, Go: b.Go}
	if len(behaviour) > 0 {
		// encoding/json sorts map keys: one behaviour, one encoding.
		data, err := json.Marshal(behaviour)
		if err != nil {
			return "", fmt.Errorf("harness behaviour: %w", err)
		}
		sum := sha256.Sum256(data)
		part.Behaviour = "sha256:" + hex.EncodeToString(sum[:])
	}
	out, err := json.Marshal(part)
	if err != nil {
		return "", fmt.Errorf("harness component: %w", err)
	}
	return string(out), nil
}
