// Package integration holds factline's end-to-end tests: every service
// running against real NATS servers, real workspaces and real processes.
package integration
