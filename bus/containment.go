package bus

import (
	"context"
	"fmt"

	"github.com/factline/factline/events"
)

// ClaimedContainment returns the containment record a run.claimed holds:
// the record itself, or the blob its ContainmentDigest names, fetched and
// checked against the digest. It returns nil for a claim that recorded
// none (a claim of an older runner).
func (h *Blobs) ClaimedContainment(ctx context.Context, claim events.RunClaimed) (*events.Containment, error) {
	if claim.Containment != nil || claim.ContainmentDigest == "" {
		return claim.Containment, nil
	}
	data, err := h.Get(ctx, claim.ContainmentDigest)
	if err != nil {
		return nil, fmt.Errorf("the claim's containment: %w", err)
	}
	return events.DecodeContainmentBlob(data, claim.ContainmentDigest)
}
