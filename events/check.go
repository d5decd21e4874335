package events

import (
	"fmt"
	"slices"
)

// The helpers below keep Validate methods short: each returns the first
// problem it finds, naming the full field path.

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func at(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

func needString[T ~string](path string, v T) error {
	if v == "" {
		return missing(path)
	}
	return nil
}

func needPositive[T ~uint32 | ~uint64](path string, v T) error {
	if v == 0 {
		return invalid(path, "must be at least 1")
	}
	return nil
}

func needOneOf[T ~string](path string, v T, allowed []T) error {
	if v == "" {
		return missing(path)
	}
	if !slices.Contains(allowed, v) {
		return invalid(path, "unknown value %q (want one of %v)", string(v), allowed)
	}
	return nil
}

func needDigest(path string, d Digest) error {
	if d == "" {
		return missing(path)
	}
	return d.Validate(path)
}

func optDigest(path string, d Digest) error {
	if d == "" {
		return nil
	}
	return d.Validate(path)
}

func eachString[T ~string](path string, vs []T) error {
	for i, v := range vs {
		if v == "" {
			return missing(at(path, i))
		}
	}
	return nil
}

// validator is implemented by every nested value of a body.
type validator interface{ validate(path string) error }

func each[T validator](path string, vs []T) error {
	for i, v := range vs {
		if err := v.validate(at(path, i)); err != nil {
			return err
		}
	}
	return nil
}

func needNonEmpty[T any](path string, vs []T) error {
	if len(vs) == 0 {
		return missing(path)
	}
	return nil
}
