package main

import (
	"net"
	"strconv"
	"strings"
	"testing"
)

// A port another process listens on is named as taken, with the way to
// choose another, for each address factline listens on.
func TestABusyPortSaysHowToChooseAnother(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	store := t.TempDir()
	if code, _, errOut := runCLI(t, "demo", "--store", store, "--fsync", "interval"); code != 0 {
		t.Fatalf("demo: %s", errOut)
	}
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"view", "--store", store, "--listen", addr}, "--listen"},
		{[]string{"serve", "--services", "meter", "--store", t.TempDir(), "--metrics", addr}, "--metrics"},
		{[]string{"serve", "--services", "meter", "--store", t.TempDir(), "--listen", port}, "--listen"},
	} {
		code, _, errOut := runCLI(t, c.args...)
		if code != 1 || !strings.Contains(errOut, "in use") || !strings.Contains(errOut, c.flag+" 127.0.0.1:0") {
			t.Errorf("factline %v on a busy port: exit %d, %q; want exit 1 saying the port is in use and how to choose another (%s 127.0.0.1:0)",
				c.args, code, errOut, c.flag)
		}
	}
}
