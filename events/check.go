package events

import (
	"slices"
	"strconv"
)

// The helpers below keep Validate methods short: each returns the first
// problem it finds, naming the full field path. They take the parent path
// and the field name apart and join them only on failure, because
// validation runs on every fact made and read, and the happy path should
// not build strings.

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func at(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

func needString[T ~string](p, field string, v T) error {
	if v == "" {
		return missing(join(p, field))
	}
	return nil
}

func needPositive[T ~uint32 | ~uint64](p, field string, v T) error {
	if v == 0 {
		return invalid(join(p, field), "must be at least 1")
	}
	return nil
}

func needOneOf[T ~string](p, field string, v T, allowed []T) error {
	if v == "" {
		return missing(join(p, field))
	}
	if !slices.Contains(allowed, v) {
		return invalid(join(p, field), "unknown value %q (want one of %v)", string(v), allowed)
	}
	return nil
}

func needDigest(p, field string, d Digest) error {
	if d == "" {
		return missing(join(p, field))
	}
	return optDigest(p, field, d)
}

func optDigest(p, field string, d Digest) error {
	if d == "" || d.valid() {
		return nil
	}
	return d.Validate(join(p, field))
}

func eachString[T ~string](p, field string, vs []T) error {
	for i, v := range vs {
		if v == "" {
			return missing(at(join(p, field), i))
		}
	}
	return nil
}

// validator is implemented by every nested value of a body.
type validator interface{ validate(path string) error }

func each[T validator](p, field string, vs []T) error {
	if len(vs) == 0 {
		return nil
	}
	base := join(p, field)
	for i, v := range vs {
		if err := v.validate(at(base, i)); err != nil {
			return err
		}
	}
	return nil
}

func needNonEmpty[T any](p, field string, vs []T) error {
	if len(vs) == 0 {
		return missing(join(p, field))
	}
	return nil
}
