package sandbox

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
)

// Why keeping a probe's answer is sound: the probe's commands learn what
// the kernel grants a process like this one (its credentials,
// capabilities, resource limits and namespaces, all in probeKey) when they
// run with the asked features (the Config, in probeKey) from a directory
// below the work dir. Of the work dir, what counts is whether the service
// can make a directory there, whether a fresh uid can pass through every
// directory on the way to it, and the mounts it lies on (which the
// attempt's mount namespace binds and remounts): the key holds, for each
// directory from / down to it, its mount, device, type, mode and owner.
// So a work dir of the same kind (every t.TempDir of a test binary, every
// work dir below the same parent) shares the answer, and one that differs
// in any of these is probed anew. A fresh uid has no group and no ACL
// names it, so modes alone decide what it may pass. A read-only host also
// depends on every other mount it remounts: the key holds those. What is
// not keyed is what an administrator changes under a running process
// (sysctls such as user.max_user_namespaces, a security module's policy):
// a service started after such a change probes again. The record is made
// for each caller from the finding (by describe, as a probe always made
// it), so that its reasons and the sweep name the caller's work dir; a
// finding whose reasons name the work dir it was probed in is kept for
// that work dir alone.

// probeKey is every input that changes what a probe finds.
type probeKey struct {
	cfg    Config            // WorkDir and Engine zero: the probe commands use neither
	bash   string            // the shell the commands run with
	path   string            // PATH, which the commands get
	self   string            // this process's credentials, capabilities, no_new_privs and seccomp mode
	ns     string            // this process's namespaces
	limits string            // this process's resource limits, soft and hard
	mounts [sha256.Size]byte // what of the host's mount table the probe depends on (mountsKey)
	dir    string            // the kind of work dir: each directory from / down to it
	exact  string            // the work dir itself, for a finding whose reasons name it
}

// probeCache is the process's probe answers, and the probes under way.
type probeCache struct {
	mu    sync.Mutex
	calls map[probeKey]*probeCall
}

// probeCall is one probe of one key: done is closed when f and err are
// set.
type probeCall struct {
	done chan struct{}
	f    *finding
	err  error
}

// probes is the process's probe cache.
var probes = &probeCache{calls: map[probeKey]*probeCall{}}

// find returns what the host grants cfg in dir: a kept answer, the answer
// of a probe of the same key under way, or that of a probe it runs.
func (pc *probeCache) find(ctx context.Context, cfg Config, bash, dir string) (*finding, error) {
	key, err := keyFor(cfg, bash, dir)
	if err != nil {
		// What the key is made of cannot be read (a work dir that does
		// not exist): the probe itself says what is wrong.
		return probeHost(ctx, cfg, bash, dir)
	}
	f, err := pc.shared(ctx, key, cfg, bash, dir)
	if err != nil || f.dir == dir || !f.names(f.dir) {
		return f, err
	}
	key.exact = cleanPath(dir)
	return pc.shared(ctx, key, cfg, bash, dir)
}

// shared returns the answer kept for key, waits for a probe of key under
// way, or runs one. Only a probe that succeeded and had no command time
// out is kept. A caller never takes another's error: when the probe it
// waited for failed, it probes (or waits) again.
func (pc *probeCache) shared(ctx context.Context, key probeKey, cfg Config, bash, dir string) (*finding, error) {
	for {
		pc.mu.Lock()
		call, ok := pc.calls[key]
		if !ok {
			call = &probeCall{done: make(chan struct{})}
			pc.calls[key] = call
			pc.mu.Unlock()
			pc.run(ctx, key, call, cfg, bash, dir)
			return call.f, call.err
		}
		pc.mu.Unlock()
		if tap := probeWaitTap.Load(); tap != nil {
			(*tap)(dir)
		}
		select {
		case <-call.done:
		case <-ctx.Done():
			return nil, fmt.Errorf("containment probe: waiting for another caller's probe: %w", ctx.Err())
		}
		if call.err == nil {
			return call.f, nil
		}
	}
}

// run probes for call, and forgets it unless it is to be kept; waiters
// are woken whatever happens, a panic included.
func (pc *probeCache) run(ctx context.Context, key probeKey, call *probeCall, cfg Config, bash, dir string) {
	call.err = errors.New("containment probe: the probe panicked")
	defer func() {
		if call.err != nil || call.f.timedOut {
			pc.mu.Lock()
			delete(pc.calls, key)
			pc.mu.Unlock()
		}
		close(call.done)
	}()
	call.f, call.err = probeHost(ctx, cfg, bash, dir)
}
