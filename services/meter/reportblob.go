package meter

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/factline/factline/events"
	"github.com/factline/factline/services/meter/measure"
)

// storeReport stores r's JSON as a blob and returns its digest, without
// holding the JSON: it is written once to learn its digest and once more
// into the store's chunks. A 100,000-run report is ~50 MB of JSON, which
// the meter held (and the encoder twice) at the suite's end, when its
// process peaks.
func (s *Service) storeReport(ctx context.Context, r measure.Report) (events.Digest, error) {
	digest, size, err := measure.JSONDigest(r)
	if err != nil {
		return "", fmt.Errorf("meter: encode the report of %s: %w", r.Suite, err)
	}
	pr, pw := io.Pipe()
	wrote := make(chan error, 1)
	go func() {
		err := measure.WriteJSON(pw, r)
		pw.CloseWithError(err)
		wrote <- err
	}()
	err = s.sh.Bus.Blobs().PutFrom(ctx, digest, size, pr)
	// A blob already stored is not read: the writer is told to stop.
	pr.CloseWithError(errReportStored)
	werr := <-wrote
	if err != nil {
		return "", fmt.Errorf("meter: store the report of %s: %w", r.Suite, err)
	}
	if werr != nil && !errors.Is(werr, errReportStored) {
		return "", fmt.Errorf("meter: encode the report of %s: %w", r.Suite, werr)
	}
	return digest, nil
}

// errReportStored stops the writer of a report's JSON that the store did
// not read to its end: the blob was stored before.
var errReportStored = errors.New("the report's blob is stored")
