// Package sandbox contains the commands factline runs on behalf of a model:
// the runner's run_command and checks, and the grader's command
// instruments, which run code the model wrote.
//
// Containment is probed once per service (Probe), which records feature by
// feature what the host really grants (events.Containment); a process keeps
// the answer, so a second service asking the same of the same kind of work
// dir runs no probe command. Each attempt,
// or each graded copy of a candidate, gets a Sandbox of its own
// (Containment.ForAttempt): its own session, resource limits set by a bash
// ulimit wrapper (file size among them), a fresh unprivileged uid when the
// service is root (its directories handed over and closed to other users
// before each command, every process of the uid killed after), when root a
// mount namespace of its own (private /tmp, /var/tmp, /dev/shm and /proc,
// the rest of the host read-only), no network, and only the environment
// the caller passes. Sandbox.Run starts one command that way and always
// leaves nothing of it running; Sandbox.Close ends the attempt and removes
// what its uid left where every user may write.
//
// Every directory a service works in (an attempt's, a graded copy's) is a
// site named after the service's process (OpenSite, Owner); Reap removes
// what dead instances of a kind left in a work dir: their sites, the
// processes and files of their commands' users, and their containers.
//
// A case that names an environment image runs its commands in a container
// instead (Containment.Container): one per attempt, made through the
// engine's CLI (Engine: podman or docker), with the same rlimits, uid,
// output caps and kills, cgroup limits, the image's file system and no
// network, its record read back from inside it. See docs/containment.md.
package sandbox
