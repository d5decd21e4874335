package kubernetes

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// services are factline's five services, each a Deployment of its own.
var services = []string{"runner", "staller", "decider", "grader", "meter"}

// roles are ops/nats/roles.conf's roles: one Secret each.
var roles = []string{"admin", "submitter", "runner", "staller", "decider", "grader", "meter", "ops", "analyst"}

func load(t *testing.T) []Manifest {
	t.Helper()
	_, ms, err := Load(".")
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func find[T any](ms []Manifest, name string) (T, bool) {
	for _, m := range ms {
		if o, ok := m.Object.(T); ok && m.Object.GetName() == name {
			return o, true
		}
	}
	var zero T
	return zero, false
}

func TestEveryManifestDecodesStrictlyIntoTheAPITypes(t *testing.T) {
	ms := load(t)
	count := map[string]int{}
	for _, m := range ms {
		count[m.Kind()]++
	}
	want := map[string]int{"Namespace": 1, "Secret": len(roles), "ConfigMap": 1, "Service": 1, "StatefulSet": 1, "Deployment": len(services), "Job": 1}
	if fmt.Sprint(count) != fmt.Sprint(want) {
		t.Fatalf("kinds %v, want %v", count, want)
	}
}

func TestAFieldTheAPILacksIsRefusedNamingFileAndDocument(t *testing.T) {
	for name, doc := range map[string]string{
		"misspelt field": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  replica: 2\n",
		"field twice":    "apiVersion: v1\nkind: Secret\nmetadata: {name: x}\ntype: Opaque\ntype: Opaque\n",
		"unknown kind":   "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: x}\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Decode("bad.yaml", []byte("# a comment\n---\n"+doc))
			var de *DecodeError
			if !errors.As(err, &de) || de.File != "bad.yaml" || de.Index != 1 {
				t.Fatalf("got %v, want a DecodeError for bad.yaml document 1", err)
			}
		})
	}
}

func TestTheKustomizationListsEveryManifestOnce(t *testing.T) {
	k, _, err := Load(".")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files = slices.DeleteFunc(files, func(f string) bool { return f == "kustomization.yaml" })
	got := slices.Sorted(slices.Values(k.Resources))
	if !slices.Equal(got, files) {
		t.Fatalf("resources %v, files %v", got, files)
	}
	if k.Namespace != "factline" {
		t.Fatalf("namespace %q", k.Namespace)
	}
}

func TestEachServiceIsADeploymentReadyFromHealthzAndScraped(t *testing.T) {
	ms := load(t)
	for _, svc := range services {
		t.Run(svc, func(t *testing.T) {
			d, ok := find[*appsv1.Deployment](ms, svc)
			if !ok {
				t.Fatalf("no Deployment %s", svc)
			}
			pod := d.Spec.Template
			if len(pod.Spec.Containers) != 1 {
				t.Fatalf("%d containers", len(pod.Spec.Containers))
			}
			c := pod.Spec.Containers[0]
			var metrics int32
			for _, p := range c.Ports {
				if p.Name == "metrics" {
					metrics = p.ContainerPort
				}
			}
			if metrics == 0 {
				t.Fatal("no port named metrics")
			}
			r := c.ReadinessProbe
			if r == nil || r.HTTPGet == nil || r.HTTPGet.Path != "/healthz" || r.HTTPGet.Port.String() != "metrics" {
				t.Fatalf("readiness %+v, want GET /healthz on the metrics port", r)
			}
			a := pod.Annotations
			if a["prometheus.io/scrape"] != "true" || a["prometheus.io/port"] != fmt.Sprint(metrics) || a["prometheus.io/path"] != "/metrics" {
				t.Fatalf("scrape annotations %v", a)
			}
			args := strings.Join(c.Args, " ")
			for _, want := range []string{"serve --services " + svc + " ", "--user " + svc, fmt.Sprintf("--metrics 0.0.0.0:%d --allow-remote", metrics), "--replicas 3"} {
				if !strings.Contains(args, want) {
					t.Fatalf("args %q lack %q", args, want)
				}
			}
			if len(c.Env) != 1 || c.Env[0].Name != "FACTLINE_NATS_PASSWORD" || c.Env[0].ValueFrom == nil ||
				c.Env[0].ValueFrom.SecretKeyRef == nil || c.Env[0].ValueFrom.SecretKeyRef.Name != "factline-"+svc {
				t.Fatalf("env %+v, want only FACTLINE_NATS_PASSWORD from Secret factline-%s", c.Env, svc)
			}
			if sc := pod.Spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
				t.Fatal("the pod may run as root")
			}
		})
	}
}

func TestRunnersAreAScalableDeploymentWithNoStateOfTheirOwn(t *testing.T) {
	d, ok := find[*appsv1.Deployment](load(t), "runner")
	if !ok {
		t.Fatal("no runner Deployment")
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
		t.Fatalf("replicas %v: two runners at least, so one takes over from the other", d.Spec.Replicas)
	}
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.EmptyDir == nil {
			t.Fatalf("volume %s is not an emptyDir: a runner keeps nothing the log does not", v.Name)
		}
	}
}

func TestEveryRoleHasASecretAndNATSReadsThemAll(t *testing.T) {
	ms := load(t)
	ss, ok := find[*appsv1.StatefulSet](ms, "nats")
	if !ok {
		t.Fatal("no StatefulSet nats")
	}
	env := map[string]string{}
	for _, e := range ss.Spec.Template.Spec.Containers[0].Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			env[e.Name] = e.ValueFrom.SecretKeyRef.Name
		}
	}
	for _, r := range roles {
		s, ok := find[*corev1.Secret](ms, "factline-"+r)
		if !ok {
			t.Fatalf("no Secret factline-%s", r)
		}
		if _, ok := s.StringData["password"]; !ok {
			t.Fatalf("Secret factline-%s has no password", r)
		}
		if got := env["FACTLINE_"+strings.ToUpper(r)+"_PASSWORD"]; got != "factline-"+r {
			t.Fatalf("NATS reads %s's password from %q", r, got)
		}
	}
}

func TestNATSIsAThreeNodeJetStreamStatefulSetRoutedByItsHeadlessService(t *testing.T) {
	ms := load(t)
	ss, _ := find[*appsv1.StatefulSet](ms, "nats")
	svc, ok := find[*corev1.Service](ms, ss.Spec.ServiceName)
	if !ok || svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Fatalf("the StatefulSet's service %q is not a headless Service", ss.Spec.ServiceName)
	}
	if ss.Spec.Replicas == nil || *ss.Spec.Replicas != 3 || len(ss.Spec.VolumeClaimTemplates) != 1 {
		t.Fatalf("replicas %v, claims %d: want three nodes with a volume each", ss.Spec.Replicas, len(ss.Spec.VolumeClaimTemplates))
	}
	cm, ok := find[*corev1.ConfigMap](ms, "nats-config")
	if !ok {
		t.Fatal("no ConfigMap nats-config")
	}
	conf := cm.Data["nats.conf"]
	for i := range 3 {
		route := fmt.Sprintf("nats-route://%s-%d.%s:6222", ss.Name, i, svc.Name)
		if !strings.Contains(conf, route) {
			t.Fatalf("nats.conf lacks the route %s", route)
		}
	}
	for _, want := range []string{"jetstream", "sync_interval: always", "include ./roles.conf"} {
		if !strings.Contains(conf, want) {
			t.Fatalf("nats.conf lacks %q", want)
		}
	}
}

func TestTheClusterConfigMapCarriesTheRoles(t *testing.T) {
	cm, _ := find[*corev1.ConfigMap](load(t), "nats-config")
	want, err := os.ReadFile("../../ops/nats/roles.conf")
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["roles.conf"] != string(want) {
		t.Fatal("nats-config's roles.conf differs from ops/nats/roles.conf: copy it again (indented four spaces)")
	}
}
