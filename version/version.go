// Package version names the build of the factline harness. The harness
// version is one component of an attempt's agent identity: two attempts run
// by different harness versions are different agents, even with the same
// model and the same case.
package version

// Harness is the version of the agent harness: the runner's loop, its tools
// and its context building. Bump it whenever a change can alter what a model
// sees or what its calls do, so that results of the two builds are never
// pooled as one agent's.
const Harness = "0.1.0"
