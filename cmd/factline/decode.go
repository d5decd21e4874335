package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/factline/factline/events"
)

// maxRawMessage bounds what decode reads: a fact is small (large payloads
// go to blobs), and JetStream's default message limit is 1 MiB.
const maxRawMessage = 8 << 20

// newDecodeCmd prints one raw stored message (msgpack, from a file or
// standard input) as JSON, so that NATS's own tools show readable facts:
//
//	nats sub 'fact.>' --translate 'factline decode --subject {{ Subject }}'
//	nats stream get FACTS 42 --raw | factline decode --subject fact.s.r.run.ended
//
// The output is the fact's wire map. A message that is no valid fact is
// an error naming why (exit 1); with --subject, a fact that does not match
// its subject is refused too. A fact stored in envelope version 4 (what
// factline stores today) needs --subject: its suite and run are the
// subject's.
func newDecodeCmd() *cobra.Command {
	var subject string
	c := newCommand("decode", maxArgs(1, "decode reads one message: a FILE, or - (the default) for standard input"))
	c.RunE = func(c *cobra.Command, args []string) error {
		return runDecode(args, subject, c.InOrStdin(), c.OutOrStdout())
	}
	c.Flags().StringVar(&subject, "subject", "", "the subject the message was stored on: a fact that does not match it is refused")
	return c
}

func runDecode(pos []string, subject string, stdin io.Reader, out io.Writer) error {
	in := stdin
	if len(pos) == 1 && pos[0] != "-" {
		name := pos[0]
		f, err := os.Open(name)
		if err != nil {
			return fileError{err}
		}
		defer f.Close()
		in = f
	}
	data, err := io.ReadAll(io.LimitReader(in, maxRawMessage+1))
	if err != nil {
		return fmt.Errorf("read the message: %w", err)
	}
	if len(data) > maxRawMessage {
		return fmt.Errorf("the message is over %d bytes; no fact is", maxRawMessage)
	}
	if subject != "" {
		_, err = events.DecodeStored(subject, data)
	} else {
		_, err = events.Decode(data)
	}
	if err != nil {
		// The command's name says what failed; the decoder's error says
		// why, starting with the field it refused ("fact: …", "kind: …").
		if errors.Is(err, events.ErrSubjectMismatch) {
			return fmt.Errorf("refused: %w", err)
		}
		if errors.Is(err, events.ErrNeedsSubject) {
			// Not "not a fact": it is one, read without what it needs.
			return fmt.Errorf("a fact in envelope version 4 is read with --subject, the subject it was stored on (%w)", err)
		}
		return fmt.Errorf("not a fact (%w)", err)
	}
	// Any envelope version, shown with version 1's keys; version 4's suite
	// and run are the subject's.
	wire, err := events.WireMapStored(subject, data)
	if err != nil {
		return fmt.Errorf("the message's map: %w", err)
	}
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	return enc.Encode(wire)
}
