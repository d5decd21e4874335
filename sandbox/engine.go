package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/factline/factline/events"
)

// Settings of the container engine, read from the environment when a
// Config leaves its Engine empty.
const (
	// EnvEngine names the engine's CLI (default podman; docker works too:
	// only docker-compatible flags are used).
	EnvEngine = "FACTLINE_CONTAINER_ENGINE"
	// EnvRuntime names the OCI runtime podman is given (--runtime). Unset,
	// podman gets runc when runc is installed, since crun fails on hosts
	// with hybrid cgroups; "default" leaves the engine's own choice.
	EnvRuntime = "FACTLINE_CONTAINER_RUNTIME"
)

// Engine is a container engine driven through its command line: podman or
// docker (or any CLI that takes docker's flags).
type Engine struct {
	// Bin is the CLI, a name looked up in PATH or a path.
	Bin string
	// Runtime, when set, is the OCI runtime the containers run under
	// (podman: the global --runtime flag; docker: create's --runtime).
	Runtime string
}

// EngineFromEnv is the engine the environment names (EnvEngine,
// EnvRuntime), podman by default.
func EngineFromEnv() Engine {
	e := Engine{Bin: os.Getenv(EnvEngine)}
	if e.Bin == "" {
		e.Bin = "podman"
	}
	switch rt := os.Getenv(EnvRuntime); rt {
	case "default":
	case "":
		if e.podman() {
			if _, err := exec.LookPath("runc"); err == nil {
				e.Runtime = "runc"
			}
		}
	default:
		e.Runtime = rt
	}
	return e
}

func (e Engine) orDefault() Engine {
	if e.Bin == "" {
		return EngineFromEnv()
	}
	return e
}

// podman reports whether the CLI is podman, whose --runtime is a global
// flag (docker's belongs to create).
func (e Engine) podman() bool { return strings.Contains(filepath.Base(e.Bin), "podman") }

// String names the engine in records and errors: "podman (runtime runc)".
func (e Engine) String() string {
	if e.Runtime == "" {
		return filepath.Base(e.Bin)
	}
	return filepath.Base(e.Bin) + " (runtime " + e.Runtime + ")"
}

// command returns the engine CLI invoked with args.
func (e Engine) command(ctx context.Context, args ...string) *exec.Cmd {
	if e.Runtime != "" && e.podman() {
		args = append([]string{"--runtime", e.Runtime}, args...)
	}
	cmd := exec.CommandContext(ctx, e.Bin, args...)
	cmd.Env = engineEnv()
	return cmd
}

// engineEnv is what the engine CLI itself runs with: the service's PATH,
// HOME and the engine's own settings, never the rest of its environment.
func engineEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "PATH", k == "HOME", k == "XDG_RUNTIME_DIR", k == "TMPDIR",
			strings.HasPrefix(k, "DOCKER_"), strings.HasPrefix(k, "CONTAINER_"), strings.HasPrefix(k, "CONTAINERS_"):
			env = append(env, kv)
		}
	}
	return env
}

// output runs the engine CLI and returns its standard output; a failure
// names the command and says what the engine wrote.
func (e Engine) output(ctx context.Context, args ...string) (string, error) {
	return e.outputIn(ctx, "", args...)
}

// outputIn is output with the CLI working in dir ("" the service's own).
func (e Engine) outputIn(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := e.command(ctx, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(stdout.String())
		}
		return "", fmt.Errorf("%s %s: %w: %s", filepath.Base(e.Bin), args[0], err, msg)
	}
	return strings.TrimSpace(stdout.String()), nil
}

// ErrImageMissing matches every *ImageError with errors.Is.
var ErrImageMissing = errors.New("container image not found")

// ImageError says that an environment's image is not in the engine's
// store (or the engine cannot be asked): images are never pulled, so the
// image must be built or loaded on the machine before a suite uses it.
type ImageError struct {
	Image  string // the reference asked for
	Engine string // the engine asked
	Err    error  // what the engine said
}

// Error names the image, the engine and what went wrong.
func (e *ImageError) Error() string {
	return fmt.Sprintf("environment image %q: not found by %s (images are not pulled: build or load it first): %v", e.Image, e.Engine, e.Err)
}

// Unwrap returns the engine's error.
func (e *ImageError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrImageMissing) true.
func (e *ImageError) Is(target error) bool { return target == ErrImageMissing }

// ResolveImage returns the digest of the image ref names: its image ID,
// the digest of the image's configuration, which names its layers by
// content, so the same digest is the same file system whatever the tag
// says. A missing image (or an engine that cannot be run) is an
// *ImageError.
func (e Engine) ResolveImage(ctx context.Context, ref string) (events.Digest, error) {
	e = e.orDefault()
	if ref == "" {
		return "", &ImageError{Image: ref, Engine: e.String(), Err: errors.New("no image named")}
	}
	id, err := e.output(ctx, "image", "inspect", "--format", "{{.Id}}", ref)
	if err != nil {
		return "", &ImageError{Image: ref, Engine: e.String(), Err: err}
	}
	// podman prints the bare hex, docker with its algorithm.
	id = strings.TrimPrefix(strings.TrimSpace(id), "sha256:")
	d := events.Digest("sha256:" + id)
	if err := d.Validate("image"); err != nil {
		return "", &ImageError{Image: ref, Engine: e.String(), Err: fmt.Errorf("the engine names it %q: %w", id, err)}
	}
	return d, nil
}

// Labels on every container factline makes: a takeover finds the
// containers of a run by them, whoever made them.
const (
	LabelSuite = "io.factline.suite"
	LabelRun   = "io.factline.run"
	LabelLease = "io.factline.lease"
)

// RemoveContainers removes (killing what runs in them) every container
// carrying all of the labels, and returns their names. A runner taking a
// run over calls it with the run's suite and run labels, so that a
// container of a runner that died is never left behind on this host.
func (e Engine) RemoveContainers(ctx context.Context, labels map[string]string) ([]string, error) {
	e = e.orDefault()
	args := []string{"ps", "--all", "--format", "{{.Names}}"}
	for k, v := range labels {
		args = append(args, "--filter", "label="+k+"="+v)
	}
	out, err := e.output(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	names := strings.Fields(out)
	for _, n := range names {
		if err := e.remove(ctx, n); err != nil {
			return names, err
		}
	}
	return names, nil
}

// remove kills and removes one container; one already gone is no error.
func (e Engine) remove(ctx context.Context, name string) error {
	if _, err := e.output(ctx, "rm", "--force", name); err != nil {
		if exists, lerr := e.output(ctx, "ps", "--all", "--format", "{{.Names}}", "--filter", "name=^"+name+"$"); lerr == nil && exists == "" {
			return nil
		}
		return fmt.Errorf("remove container %s: %w", name, err)
	}
	return nil
}
