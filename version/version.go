// Package version names the build of the factline harness. The harness
// component of an attempt's agent identity is made from it (HarnessOf):
// the build that runs (module version, VCS revision, dirty flag) and the
// digest of what shapes its behaviour, so that two attempts run by builds
// or behaviours that differ are different agents, even with the same model
// and the same case. No hand-bumped constant stands in for it.
package version
