package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	natsserver "github.com/nats-io/nats-server/v2/server"

	"github.com/factline/factline/bus"
)

// compressedRatio is what compression (factline setup --compress) makes of
// the FACTS stream written so far under store: the bytes its sealed blocks
// take once compressed ÷ the bytes they take now. Each sealed block (every
// block but the one being written) is compressed by the server's own block
// compression, exactly as a server with the setting compresses a block it
// seals; the block being written is left out, as the server leaves it.
func compressedRatio(store string) (float64, error) {
	files, err := filepath.Glob(filepath.Join(store, "jetstream", "*", "streams", bus.FactsStream, "msgs", "*.blk"))
	if err != nil {
		return 0, err
	}
	index := func(f string) int {
		n, _ := strconv.Atoi(strings.TrimSuffix(filepath.Base(f), ".blk"))
		return n
	}
	slices.SortFunc(files, func(a, b string) int { return index(a) - index(b) })
	if len(files) < 2 {
		return 0, fmt.Errorf("FACTS has %d blocks: none is sealed yet", len(files))
	}
	var raw, packed int
	for _, f := range files[:len(files)-1] {
		data, err := os.ReadFile(f)
		if err != nil {
			return 0, err
		}
		out, err := natsserver.S2Compression.Compress(data)
		if err != nil {
			return 0, fmt.Errorf("compress %s: %w", f, err)
		}
		raw, packed = raw+len(data), packed+len(out)
	}
	return float64(packed) / float64(raw), nil
}
