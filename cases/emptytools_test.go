package cases

import (
	"strings"
	"testing"
)

// tools: [] reads as "no tools", and was taken as "all built-in tools":
// a case meant to offer nothing offered write_file and run_command. It is
// refused, naming the field and its line; leaving tools out still offers
// every built-in tool.
func TestAnEmptyToolsListIsRefused(t *testing.T) {
	_, err := ParseCase("case.yaml", []byte("id: a\ninstruction: x\ntools: []\n"))
	if err == nil || !strings.Contains(err.Error(), "case.yaml:3: tools: ") || !strings.Contains(err.Error(), "leave tools out") {
		t.Errorf("got %v, want tools: [] refused at case.yaml:3", err)
	}
	c, err := ParseCase("case.yaml", []byte("id: a\ninstruction: x\n"))
	if err != nil || len(c.Tools) == 0 {
		t.Errorf("no tools key: %v, tools %v; want every built-in tool", err, c.Tools)
	}
}
