package cases

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// http.settle is the window after a lost answer in which a status lookup
// that finds nothing proves nothing: 5s unless the case sets it, zero
// allowed (a sink that applies nothing late), a negative or huge one
// refused with the field named.
func TestHTTPSettleWindow(t *testing.T) {
	c, err := ParseCase("ok.yaml", []byte("id: a\ninstruction: x\nhttp: {allow: ['http://127.0.0.1/'], settle: 1500ms}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.HTTP.SettleWindow(); got != 1500*time.Millisecond {
		t.Fatalf("settle 1500ms read as %v", got)
	}
	c, err = ParseCase("ok.yaml", []byte("id: a\ninstruction: x\nhttp: {allow: ['http://127.0.0.1/']}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.HTTP.SettleWindow(); got != DefaultSettle || DefaultSettle != 5*time.Second {
		t.Fatalf("no settle read as %v, want the default 5s", got)
	}
	for _, bad := range []string{"-1s", "11m"} {
		_, err := ParseCase("bad.yaml", []byte("id: a\ninstruction: x\nhttp: {allow: ['http://127.0.0.1/'], settle: "+bad+"}\n"))
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "http.settle") {
			t.Errorf("settle %s: %v, want an error naming http.settle", bad, err)
		}
	}
}
