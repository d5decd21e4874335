//go:build deploy

package deploy

import (
	"context"
	"strings"
	"testing"
	"time"
)

// make image builds an image whose factline names the checkout it was
// built from, that runs as an ordinary user, and that documents the
// store's NATS port and the metrics port.
func TestDeployImageNamesItsBuildAndRunsAsAnOrdinaryUser(t *testing.T) {
	buildImages(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rev := strings.TrimSpace(must(t)(sh(ctx, nil, "git", "-C", root(t), "rev-parse", "HEAD")))
	version := must(t)(sh(ctx, nil, engine(), "run", "--rm", "localhost/factline:latest", "version"))
	if !strings.Contains(version, rev) {
		t.Fatalf("factline version in the image says %q; want the build's revision %s", version, rev)
	}
	uid := strings.TrimSpace(must(t)(sh(ctx, nil, engine(), "run", "--rm", "--entrypoint", "/bin/id", "localhost/factline:latest", "-u")))
	if uid != "10001" {
		t.Fatalf("the image runs as uid %s, want 10001", uid)
	}
	ports := must(t)(sh(ctx, nil, engine(), "image", "inspect", "--format", "{{json .Config.ExposedPorts}}", "localhost/factline:latest"))
	for _, p := range []string{"4222/tcp", "9464/tcp"} {
		if !strings.Contains(ports, p) {
			t.Fatalf("the image exposes %s, not %s", ports, p)
		}
	}
	for _, img := range []string{"localhost/factline-nats:latest", "localhost/factline-prometheus:latest"} {
		user := strings.TrimSpace(must(t)(sh(ctx, nil, engine(), "image", "inspect", "--format", "{{.Config.User}}", img)))
		if user == "" || strings.HasPrefix(user, "0") || strings.HasPrefix(user, "root") {
			t.Fatalf("%s runs as %q", img, user)
		}
	}
}
