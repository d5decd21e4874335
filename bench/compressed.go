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
//
// A stream whose facts all fit in its first block has none sealed: then
// that one block is compressed as it stands (sealed is false), because B2's
// facts shrank to fit one block and the figure would otherwise vanish from
// the table rather than say what compression makes of them.
func compressedRatio(store string) (ratio float64, sealed bool, err error) {
	files, err := filepath.Glob(filepath.Join(store, "jetstream", "*", "streams", bus.FactsStream, "msgs", "*.blk"))
	if err != nil {
		return 0, false, err
	}
	index := func(f string) int {
		n, _ := strconv.Atoi(strings.TrimSuffix(filepath.Base(f), ".blk"))
		return n
	}
	slices.SortFunc(files, func(a, b string) int { return index(a) - index(b) })
	sealed = len(files) > 1
	if sealed {
		files = files[:len(files)-1]
	}
	var raw, packed int
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return 0, false, err
		}
		out, err := natsserver.S2Compression.Compress(data)
		if err != nil {
			return 0, false, fmt.Errorf("compress %s: %w", f, err)
		}
		raw, packed = raw+len(data), packed+len(out)
	}
	if raw == 0 {
		return 0, false, fmt.Errorf("FACTS holds no facts yet (%d blocks, all empty)", len(files))
	}
	return float64(packed) / float64(raw), sealed, nil
}
