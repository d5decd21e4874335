// Package deploy holds factline's deployment: the container images
// (Containerfile, nats/, prometheus/, build-images.sh), a compose fleet
// (compose/) and Kubernetes manifests (kubernetes/), described in
// docs/deploy.md. Its tests build the images and run them, for minutes:
// they carry the build tag deploy and run under make deploy-test.
package deploy
