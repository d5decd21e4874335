package events

import (
	"encoding/json"
	"fmt"
)

// Containment states.
const (
	// ContainmentActive: the feature is in force, at the recorded limit.
	ContainmentActive = "active"
	// ContainmentUnsupported: the service (runner or grader) asked for the
	// feature and the host refused it (or it would not bind); Detail says
	// why.
	ContainmentUnsupported = "unsupported"
	// ContainmentOff: the service was configured not to use the feature.
	ContainmentOff = "off"
)

var containmentStates = []string{ContainmentActive, ContainmentUnsupported, ContainmentOff}

// Containment records how a service (the runner in run.claimed, the grader
// in grade.instrument) contains the commands it runs: the
// provider (e.g. "process") and, feature by feature, what is in force on
// this host. A feature the host does not support is recorded as
// unsupported, never claimed.
type Containment struct {
	Provider string               `msgpack:"provider" json:"provider"`
	Features []ContainmentFeature `msgpack:"features" json:"features"`
	// Image is the container image commands ran in (provider
	// "container"); absent for the process provider and in facts of older
	// services.
	Image *ContainerImage `msgpack:"image,omitempty" json:"image,omitempty"`
}

// ContainerImage is the image of a container environment: the reference
// the case named and the digest the engine resolved it to (the image ID,
// the digest of its configuration, which names its layers by content).
// The digest, not the reference, says what ran.
type ContainerImage struct {
	Ref    string `msgpack:"ref" json:"ref"`
	Digest Digest `msgpack:"digest" json:"digest"`
}

// ContainmentFeature is one containment feature and its effective setting.
// Limit is the effective limit for the limit features (in the unit the
// feature's name says), Detail a short explanation (the uid commands run
// as, or why the feature is unsupported).
type ContainmentFeature struct {
	Name   string `msgpack:"name" json:"name"`
	State  string `msgpack:"state" json:"state"`
	Limit  uint64 `msgpack:"limit,omitempty" json:"limit,omitempty"`
	Detail string `msgpack:"detail,omitempty" json:"detail,omitempty"`
}

// Feature returns the feature of that name, if recorded.
func (c *Containment) Feature(name string) (ContainmentFeature, bool) {
	if c == nil {
		return ContainmentFeature{}, false
	}
	for _, f := range c.Features {
		if f.Name == name {
			return f, true
		}
	}
	return ContainmentFeature{}, false
}

func (c Containment) validate(p string) error {
	if err := needString(p, "provider", c.Provider); err != nil {
		return err
	}
	if c.Image != nil {
		ip := join(p, "image")
		if err := needString(ip, "ref", c.Image.Ref); err != nil {
			return err
		}
		if err := needDigest(ip, "digest", c.Image.Digest); err != nil {
			return err
		}
	}
	// Features are sorted by name without repeats, so that one setting has
	// one encoding.
	for i, f := range c.Features {
		fp := at(join(p, "features"), i)
		if err := needString(fp, "name", f.Name); err != nil {
			return err
		}
		if i > 0 && c.Features[i-1].Name >= f.Name {
			return invalid(join(fp, "name"), "features must be sorted by name without repeats (%q after %q)", f.Name, c.Features[i-1].Name)
		}
		if err := needOneOf(fp, "state", f.State, containmentStates); err != nil {
			return err
		}
	}
	return nil
}

// ContainmentBlob is the blob a claim's ContainmentDigest names: the record
// as JSON (readable as it is, e.g. from the blob store's tools), and its
// digest. One record has one encoding, so every claim of the same
// containment names the same blob.
func ContainmentBlob(c Containment) ([]byte, Digest, error) {
	if err := c.validate("containment"); err != nil {
		return nil, "", err
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil, "", fmt.Errorf("encode the containment record: %w", err)
	}
	return b, DigestOf(b), nil
}

// DecodeContainmentBlob reads a containment blob fetched by its digest d,
// checking that the bytes are the ones d names and hold a valid record.
func DecodeContainmentBlob(data []byte, d Digest) (*Containment, error) {
	if got := DigestOf(data); got != d {
		return nil, fmt.Errorf("containment blob %s: the bytes are %s", d, got)
	}
	var c Containment
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("containment blob %s: %w", d, err)
	}
	if err := c.validate("containment"); err != nil {
		return nil, fmt.Errorf("containment blob %s: %w", d, err)
	}
	return &c, nil
}
