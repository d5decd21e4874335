package sandboxtest

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// ImageWith returns a local image of the static busybox (as Image) with
// files added: each key is a path in the image, each value a host file
// (its content, links followed) or directory (copied whole, its symbolic
// links kept as links). A test's static agent, or a host's node with its
// libraries and an npm agent, goes into an image so. It is built once per
// variant and test binary, and kept in the engine's store under a name
// made of the variant and a digest of what went in (paths, modes,
// contents and link targets), so a changed input is a new image and an
// unchanged one (a rebuilt test agent) is the image already there.
func ImageWith(tb testing.TB, variant string, files map[string]string) string {
	tb.Helper()
	v, _ := images.LoadOrStore("with:"+variant, &imageOnce{})
	o := v.(*imageOnce)
	o.once.Do(func() { o.ref, o.err = buildImageWith(variant, files) })
	if o.err != nil {
		tb.Fatalf("test image %s: %v (install podman, catatonit, runc and busybox-static: scripts/test-deps does)", variant, o.err)
	}
	return o.ref
}

// extraFile is one entry ImageWith adds: a host path and its place.
type extraFile struct {
	at   string // in the image, without the leading slash
	host string
	info fs.FileInfo
}

func buildImageWith(variant string, files map[string]string) (string, error) {
	bb, applets, err := busybox()
	if err != nil {
		return "", err
	}
	var extra []extraFile
	for _, at := range slices.Sorted(func(yield func(string) bool) {
		for k := range files {
			if !yield(k) {
				return
			}
		}
	}) {
		host := files[at]
		info, err := os.Stat(host)
		if err != nil {
			return "", err
		}
		if !info.IsDir() {
			extra = append(extra, extraFile{at: strings.TrimPrefix(at, "/"), host: host, info: info})
			continue
		}
		err = filepath.WalkDir(host, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(host, p)
			info, err := d.Info()
			if err != nil {
				return err
			}
			extra = append(extra, extraFile{at: path.Join(strings.TrimPrefix(at, "/"), filepath.ToSlash(rel)), host: p, info: info})
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	h := sha256.New()
	h.Write(bb)
	fmt.Fprintln(h, variant)
	for _, f := range extra {
		fmt.Fprintln(h, f.at, f.info.Size(), f.info.Mode())
		if err := hashContent(h, f); err != nil {
			return "", err
		}
	}
	ref := "localhost/factline-test:" + variant + "-" + hex.EncodeToString(h.Sum(nil)[:6])
	return importImage(ref, 5*time.Minute, func(w io.Writer) error {
		return writeRootfs(w, bb, applets, variant, extra)
	})
}

// hashContent adds a regular file's content or a link's target to h.
func hashContent(h io.Writer, f extraFile) error {
	switch {
	case f.info.Mode()&fs.ModeSymlink != 0:
		link, err := os.Readlink(f.host)
		if err != nil {
			return err
		}
		_, err = io.WriteString(h, link+"\n")
		return err
	case f.info.Mode().IsRegular():
		r, err := os.Open(f.host)
		if err != nil {
			return err
		}
		defer r.Close()
		_, err = io.Copy(h, r)
		return err
	}
	return nil
}

// engineBin is the engine sandbox.EngineFromEnv would name (this package
// cannot import sandbox, whose tests use it).
func engineBin() string {
	if bin := os.Getenv("FACTLINE_CONTAINER_ENGINE"); bin != "" {
		return bin
	}
	return "podman"
}

// writeRootfs writes the busybox root file system (rootfsTar's) with the
// extra files and the directories above them.
func writeRootfs(w io.Writer, busybox []byte, applets []string, variant string, extra []extraFile) error {
	base, err := rootfsTar(busybox, applets, variant)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	// The base's entries first (its own end-of-archive dropped).
	tr := tar.NewReader(bytes.NewReader(base))
	dirs := map[string]bool{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if h.Typeflag == tar.TypeDir {
			dirs[strings.TrimSuffix(h.Name, "/")] = true
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return err
		}
	}
	at := time.Unix(1_700_000_000, 0)
	var mkdirs func(d string) error
	mkdirs = func(d string) error {
		if d == "." || d == "" || dirs[d] {
			return nil
		}
		if err := mkdirs(path.Dir(d)); err != nil {
			return err
		}
		dirs[d] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: at, Format: tar.FormatPAX})
	}
	for _, f := range extra {
		if err := mkdirs(path.Dir(f.at)); err != nil {
			return err
		}
		mode := int64(f.info.Mode().Perm())
		switch {
		case f.info.IsDir():
			if err := mkdirs(f.at); err != nil {
				return err
			}
		case f.info.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(f.host)
			if err != nil {
				return err
			}
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: f.at, Linkname: link, Mode: 0o777, ModTime: at, Format: tar.FormatPAX}); err != nil {
				return err
			}
		case f.info.Mode().IsRegular():
			if err := copyInto(tw, f, mode, at); err != nil {
				return err
			}
		}
	}
	return tw.Close()
}

// copyInto writes one regular file into the archive.
func copyInto(tw *tar.Writer, f extraFile, mode int64, at time.Time) error {
	r, err := os.Open(f.host)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.at, Mode: mode, Size: f.info.Size(), ModTime: at, Format: tar.FormatPAX}); err != nil {
		return err
	}
	_, err = io.Copy(tw, r)
	return err
}
