// Package kubernetes holds factline's Kubernetes manifests (the YAML files
// beside this one, gathered by kustomization.yaml) and reads them back
// strictly into the Kubernetes API's own types, so that a field the API
// does not know (a typo, a field of another version) is an error naming
// the file and the document rather than something a cluster would silently
// drop. docs/deploy.md describes the manifests.
package kubernetes

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// Manifest is one decoded document of a manifest file.
type Manifest struct {
	// File is the file's name, Index the document's place in it (from 0).
	File  string
	Index int
	// Object is the typed object: *corev1.Namespace, *corev1.Secret,
	// *corev1.ConfigMap, *corev1.Service, *appsv1.StatefulSet,
	// *appsv1.Deployment or *batchv1.Job.
	Object metav1.Object
}

// Kind is the manifest's kind, as its document names it.
func (m Manifest) Kind() string {
	switch m.Object.(type) {
	case *corev1.Namespace:
		return "Namespace"
	case *corev1.Secret:
		return "Secret"
	case *corev1.ConfigMap:
		return "ConfigMap"
	case *corev1.Service:
		return "Service"
	case *appsv1.StatefulSet:
		return "StatefulSet"
	case *appsv1.Deployment:
		return "Deployment"
	case *batchv1.Job:
		return "Job"
	}
	return fmt.Sprintf("%T", m.Object)
}

// DecodeError says which document of which file did not decode, and why.
type DecodeError struct {
	File  string
	Index int
	Err   error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("%s: document %d: %v", e.File, e.Index, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// ErrUnknownKind is a document whose apiVersion and kind are none of the
// types the manifests use.
var ErrUnknownKind = errors.New("unknown apiVersion and kind")

// newObject is an empty object of the API type an apiVersion and kind name.
func newObject(tm metav1.TypeMeta) (metav1.Object, error) {
	switch tm.APIVersion + " " + tm.Kind {
	case "v1 Namespace":
		return &corev1.Namespace{}, nil
	case "v1 Secret":
		return &corev1.Secret{}, nil
	case "v1 ConfigMap":
		return &corev1.ConfigMap{}, nil
	case "v1 Service":
		return &corev1.Service{}, nil
	case "apps/v1 StatefulSet":
		return &appsv1.StatefulSet{}, nil
	case "apps/v1 Deployment":
		return &appsv1.Deployment{}, nil
	case "batch/v1 Job":
		return &batchv1.Job{}, nil
	}
	return nil, fmt.Errorf("%w: %q %q", ErrUnknownKind, tm.APIVersion, tm.Kind)
}

// separator is YAML's document separator on a line of its own.
var separator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// Decode reads every document of one file strictly: a field the API type
// lacks, or one given twice, is an error. Documents holding only comments
// are skipped.
func Decode(file string, data []byte) ([]Manifest, error) {
	var out []Manifest
	for i, doc := range separator.Split(string(data), -1) {
		if len(bytes.TrimSpace(stripComments([]byte(doc)))) == 0 {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			return nil, &DecodeError{file, i, err}
		}
		obj, err := newObject(tm)
		if err != nil {
			return nil, &DecodeError{file, i, err}
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			return nil, &DecodeError{file, i, err}
		}
		out = append(out, Manifest{File: file, Index: i, Object: obj})
	}
	return out, nil
}

func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for line := range bytes.Lines(doc) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			b.Write(line)
		}
	}
	return b.Bytes()
}

// Kustomization is the part of kustomization.yaml these manifests use.
type Kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Namespace  string   `json:"namespace"`
	Resources  []string `json:"resources"`
}

// Load reads dir's kustomization.yaml and every resource it lists, in
// its order, strictly. A resource listed twice or missing is an error.
func Load(dir string) (Kustomization, []Manifest, error) {
	var k Kustomization
	path := filepath.Join(dir, "kustomization.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return k, nil, fmt.Errorf("read kustomization: %w", err)
	}
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		return k, nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []Manifest
	for i, r := range k.Resources {
		if slices.Contains(k.Resources[:i], r) {
			return k, nil, fmt.Errorf("%s: resource %s listed twice", path, r)
		}
		data, err := os.ReadFile(filepath.Join(dir, r))
		if err != nil {
			return k, nil, fmt.Errorf("%s: resource %s: %w", path, r, err)
		}
		ms, err := Decode(r, data)
		if err != nil {
			return k, nil, err
		}
		out = append(out, ms...)
	}
	return k, out, nil
}
