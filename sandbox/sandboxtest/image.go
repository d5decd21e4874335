package sandboxtest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// BusyboxPath is the static busybox test images are made of (Debian's
// busybox-static; scripts/test-deps installs it).
const BusyboxPath = "/bin/busybox"

// ImageMarker is a file every test image holds and no host has: a command
// that reads it runs in the image. Its content is the image's variant.
const ImageMarker = "/etc/factline-test-image"

var images sync.Map // variant -> *imageOnce

type imageOnce struct {
	once sync.Once
	ref  string
	err  error
}

// Image returns a local image built from the static busybox, holding
// ImageMarker with the variant as its content: images of two variants
// have different digests. It is built once per variant and test binary
// (and kept in the engine's store across runs, named by what it is made
// of, so that test binaries running at once share it). The engine is the
// one sandbox.EngineFromEnv names (FACTLINE_CONTAINER_ENGINE, podman); without it or busybox the test fails,
// saying what to install.
func Image(tb testing.TB, variant string) string {
	tb.Helper()
	v, _ := images.LoadOrStore(variant, &imageOnce{})
	o := v.(*imageOnce)
	o.once.Do(func() { o.ref, o.err = buildImage(variant) })
	if o.err != nil {
		tb.Fatalf("test image %s: %v (install podman, catatonit, runc and busybox-static: scripts/test-deps, which make test runs first, does)", variant, o.err)
	}
	return o.ref
}

func buildImage(variant string) (string, error) {
	bb, applets, err := busybox()
	if err != nil {
		return "", err
	}
	rootfs, err := rootfsTar(bb, applets, variant)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(rootfs)
	ref := "localhost/factline-test:" + variant + "-" + hex.EncodeToString(sum[:6])
	return importImage(ref, 2*time.Minute, func(w io.Writer) error {
		_, err := w.Write(rootfs)
		return err
	})
}

// busybox reads the static busybox and the names of its applets.
func busybox() ([]byte, []string, error) {
	bb, err := os.ReadFile(BusyboxPath)
	if err != nil {
		return nil, nil, err
	}
	list, err := exec.Command(BusyboxPath, "--list").Output()
	if err != nil {
		return nil, nil, fmt.Errorf("%s --list: %w", BusyboxPath, err)
	}
	return bb, strings.Fields(string(list)), nil
}

// importImage imports the root file system write writes as ref, unless
// the engine holds ref already (a ref names its content's digest). The
// file system is streamed: an npm agent with node is hundreds of
// megabytes.
func importImage(ref string, timeout time.Duration, write func(io.Writer) error) (string, error) {
	bin := engineBin()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if exec.CommandContext(ctx, bin, "image", "inspect", "--format", "{{.Id}}", ref).Run() == nil {
		return ref, nil
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(write(pw)) }()
	cmd := exec.CommandContext(ctx, bin, "import", "-", ref)
	cmd.Stdin = pr
	out, err := cmd.CombinedOutput()
	_ = pr.CloseWithError(io.ErrClosedPipe)
	if err != nil {
		return "", fmt.Errorf("%s import: %w: %s", bin, err, out)
	}
	return ref, nil
}

// rootfsTar is a root file system of busybox and its applets, with the
// marker; fixed times, so that the same inputs make the same bytes.
func rootfsTar(busybox []byte, applets []string, variant string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	at := time.Unix(1_700_000_000, 0)
	add := func(h *tar.Header, body []byte) error {
		h.ModTime, h.Format = at, tar.FormatPAX
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	for _, d := range []struct {
		name string
		mode int64
	}{{"bin/", 0o755}, {"etc/", 0o755}, {"tmp/", 0o1777}, {"workspace/", 0o755}, {"proc/", 0o755},
		{"sys/", 0o755}, {"dev/", 0o755}, {"factline/", 0o755}, {"usr/", 0o755}, {"usr/bin/", 0o755}} {
		if err := add(&tar.Header{Typeflag: tar.TypeDir, Name: d.name, Mode: d.mode}, nil); err != nil {
			return nil, err
		}
	}
	if err := add(&tar.Header{Typeflag: tar.TypeReg, Name: "bin/busybox", Mode: 0o755, Size: int64(len(busybox))}, busybox); err != nil {
		return nil, err
	}
	for _, a := range applets {
		if a == "busybox" || strings.Contains(a, "/") {
			continue
		}
		if err := add(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + a, Linkname: "busybox", Mode: 0o777}, nil); err != nil {
			return nil, err
		}
	}
	marker := []byte(variant + "\n")
	if err := add(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(ImageMarker, "/"), Mode: 0o644, Size: int64(len(marker))}, marker); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
