// Package sandbox contains the commands factline runs on behalf of a model:
// the runner's run_command and checks, and the grader's command
// instruments, which run code the model wrote.
//
// Containment is probed once per service (Probe), which records feature by
// feature what the host really grants (events.Containment). Each attempt,
// or each graded copy of a candidate, gets a Sandbox of its own
// (Containment.ForAttempt): its own session, resource limits set by a bash
// ulimit wrapper, a fresh unprivileged uid when the service is root (its
// directories handed over before each command, every process of the uid
// killed after), no network, and only the environment the caller passes.
// Sandbox.Run starts one command that way and always leaves nothing of it
// running.
//
// A case that names an environment image runs its commands in a container
// instead (Containment.Container): one per attempt, made through the
// engine's CLI (Engine: podman or docker), with the same rlimits, uid,
// output caps and kills, cgroup limits, the image's file system and no
// network, its record read back from inside it. See docs/containment.md.
package sandbox
