//go:build !linux

package sandboxtest

// HostLacks reports whether this host provably cannot give the named
// containment feature. Only Linux is looked at: elsewhere nothing is
// proven absent, so a test that needs the feature fails rather than pass
// having contained nothing.
func HostLacks(feature string, asked uint64) (string, bool) {
	return "", false
}
