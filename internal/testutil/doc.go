// Package testutil is what factline's tests share and no program uses:
// waiting for a condition to hold (Within, Until) and reading the imports
// of Go files for the import guards (Imports, SourceFiles, WalkGoFiles,
// CheckPureCore). It was written once after each test file had grown its
// own copy; only _test.go files import it.
package testutil
