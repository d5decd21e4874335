package integration

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/factline/factline/events"
	"github.com/factline/factline/internal/testutil"
)

// proc is a factline service running as an OS process of the built binary,
// which a fault test may SIGKILL and start again.
type proc struct {
	t    *testing.T
	bin  string
	args []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	logs   *testutil.LogBuffer
	starts int
}

// startProc starts `factline args...`; the test stops it (SIGTERM) at its
// end and prints its output if it failed.
func startProc(t *testing.T, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, bin: factlineBinary(t), args: args, logs: &testutil.LogBuffer{}}
	p.start()
	t.Cleanup(func() {
		p.stop(syscall.SIGTERM)
		if t.Failed() {
			t.Logf("factline %s (%d starts):\n%s", strings.Join(args, " "), p.starts, p.logs.String())
		}
	})
	return p
}

func (p *proc) start() {
	p.mu.Lock()
	defer p.mu.Unlock()
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	if err := cmd.Start(); err != nil {
		p.t.Errorf("start factline %v: %v", p.args, err)
		return
	}
	p.starts++
	fmt.Fprintf(p.logs, "--- start %d, pid %d ---\n", p.starts, cmd.Process.Pid)
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	p.cmd, p.exited = cmd, exited
}

// pid is the running process's id (0 when it is not running).
func (p *proc) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// alive reports whether the process runs (started and not exited).
func (p *proc) alive() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stop signals the process and waits for it to exit (SIGKILL after 20s).
func (p *proc) stop(sig syscall.Signal) {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// crash SIGKILLs the process: nothing is acknowledged, handed back or
// flushed.
func (p *proc) crash() { p.stop(syscall.SIGKILL) }

// instancePID reads the process id out of a default instance name
// ("runner-HOST-PID"); 0 when the name has none.
func instancePID(instance string) int {
	i := strings.LastIndexByte(instance, '-')
	if i < 0 {
		return 0
	}
	pid, _ := strconv.Atoi(instance[i+1:])
	return pid
}

// watchFacts calls fn with every fact of a suite as the server publishes
// it, until the test ends. fn runs on one goroutine, in log order.
func watchFacts(t *testing.T, nc *nats.Conn, suite string, fn func(events.Fact)) {
	t.Helper()
	ch := make(chan *nats.Msg, 4096)
	sub, err := nc.ChanSubscribe(events.SuiteFilter(suite), ch)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case m := <-ch:
				if f, err := events.DecodeStored(m.Subject, m.Data); err == nil {
					fn(f)
				}
			}
		}
	})
	t.Cleanup(func() { _ = sub.Unsubscribe(); cancel(); wg.Wait() })
}
