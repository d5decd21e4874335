// Package kittest helps tests and harnesses build services configured
// through the kit.
package kittest

// Must returns v, and panics with err when it is set: for building a
// service in a test or a harness whose options are known to be good, so
// that an error can only be a bug in the test itself. A test that checks
// an option's error calls the constructor directly.
func Must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
