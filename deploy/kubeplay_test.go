//go:build deploy

package deploy

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/factline/factline/deploy/kubernetes"
)

// clusterURL is the NATS the manifests name (the StatefulSet's pods by
// their headless Service); composeURL is the compose fleet's.
const (
	clusterURL = "nats://nats-0.nats:4222,nats://nats-1.nats:4222,nats://nats-2.nats:4222"
	composeURL = "nats://nats1:4222,nats://nats2:4222,nats://nats3:4222"
)

// kubePlay runs the manifests' service Deployments under podman kube play
// on the compose fleet's network, in place of its service containers,
// each pod reading its role's password from a Secret, and runs a suite
// through them: the same report as one process.
func kubePlay(t *testing.T, ctx context.Context, f *fleet) {
	_, ms, err := kubernetes.Load(filepath.Join(root(t), "deploy/kubernetes"))
	if err != nil {
		t.Fatal(err)
	}
	for _, svc := range []string{"runner-a", "runner-b", "staller", "decider", "grader", "meter"} {
		f.volumes = append(f.volumes, f.mountedVolumes(ctx, []string{f.container(svc)})...)
		must(t)(sh(ctx, nil, engine(), "rm", "-f", "-v", f.container(svc)))
	}
	var docs []string
	for _, m := range ms {
		d, ok := m.Object.(*appsv1.Deployment)
		if !ok {
			continue
		}
		d = d.DeepCopy()
		d.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}
		d.Name = f.project + "-" + d.Name
		c := &d.Spec.Template.Spec.Containers[0]
		// podman (4.3) publishes a containerPort on the host when it has
		// no hostPort: six pods on one host would collide on 9464, so the
		// ports (only names for Prometheus and the probe) are dropped here.
		c.Ports = nil
		c.ReadinessProbe = nil
		// podman (4.3) plays an emptyDir as one named volume ("work")
		// that every pod mounting it shares, where Kubernetes gives each
		// pod its own: all six pods shared /tmp, and since each pod's PIDs
		// start alike, two attempts' ./test.sh wrote and removed the same
		// /tmp/factline-sum-$$.txt (fix-sum's test failed after its fix, 1
		// run in 7). Each pod keeps its container's own /tmp instead.
		c.VolumeMounts = nil
		d.Spec.Template.Spec.Volumes = nil
		found := false
		for i, a := range c.Args {
			if a == clusterURL {
				c.Args[i], found = composeURL, true
			}
		}
		if !found {
			t.Fatalf("Deployment %s does not connect to %s", m.Object.GetName(), clusterURL)
		}
		// The Secret it reads, under a name of this test's, holding the
		// compose fleet's password for the role.
		ref := c.Env[0].ValueFrom.SecretKeyRef
		role := strings.TrimPrefix(ref.Name, "factline-")
		pw, err := os.ReadFile(filepath.Join(f.secrets, role))
		if err != nil {
			t.Fatal(err)
		}
		ref.Name = f.project + "-" + ref.Name
		// podman (4.3) reads a secretKeyRef's key out of a podman secret
		// holding a JSON object of base64 values, a Secret's data alone.
		sec, err := json.Marshal(map[string][]byte{ref.Key: pw})
		if err != nil {
			t.Fatal(err)
		}
		secFile := filepath.Join(t.TempDir(), "secret.json")
		if err := os.WriteFile(secFile, sec, 0o600); err != nil {
			t.Fatal(err)
		}
		must(t)(sh(ctx, nil, engine(), "secret", "create", ref.Name, secFile))
		name := ref.Name
		t.Cleanup(func() { _, _ = sh(context.Background(), nil, engine(), "secret", "rm", name) })
		y, err := yaml.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(y))
	}
	play := filepath.Join(t.TempDir(), "services.yaml")
	if err := os.WriteFile(play, []byte(strings.Join(docs, "---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := sh(context.Background(), nil, engine(), "pod", "ps", "--filter", "name="+f.project)
			t.Logf("pods:\n%s", out)
		}
		// The pods' containers' anonymous volumes outlive kube down:
		// the fleet's down removes them with its own.
		cs, _ := sh(context.Background(), nil, engine(), "ps", "-a", "--filter", "name="+f.project+"-", "--format", "{{.Names}}")
		f.volumes = append(f.volumes, f.mountedVolumes(context.Background(), strings.Fields(cs))...)
		if _, err := sh(context.Background(), nil, engine(), "kube", "down", play); err != nil {
			t.Errorf("podman kube down: %v", err)
		}
		// A pod kube play made before it failed is not in kube down's
		// reach, and holds the network.
		pods, _ := sh(context.Background(), nil, engine(), "pod", "ps", "-q", "--filter", "name="+f.project)
		for _, p := range strings.Fields(pods) {
			_, _ = sh(context.Background(), nil, engine(), "pod", "rm", "-f", p)
		}
	})
	must(t)(sh(ctx, nil, engine(), "kube", "play", "--network", f.network(), play))

	suite := writeSuite(t, "deploy-kube")
	want := normalise(t, referenceReport(t, ctx, suite), "deploy-kube")
	res := <-f.submit(ctx, suite)
	if res.err != nil {
		t.Fatalf("run through the pods: %v\n%s", res.err, res.stderr)
	}
	if got := normalise(t, res.report, "deploy-kube"); got != want {
		f.explainDiff(ctx, "deploy-kube", got, want)
		t.Fatalf("the pods' report differs from one process's:\n pods   %s\n single %s", got, want)
	}
}
