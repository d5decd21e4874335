package secrets

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Environment variables that name secrets.
const (
	// EnvSecretNames lists, comma-separated, further environment variables
	// whose values are secret.
	EnvSecretNames = "FACTLINE_SECRET_ENV"
	// EnvSecretFiles lists, comma-separated, files whose contents are
	// secret (a key file, a NATS credentials file).
	EnvSecretFiles = "FACTLINE_SECRET_FILES"
)

// DefaultNames are the environment variables always treated as secret:
// the model keys every hosted provider reads (openai and
// openai-responses share OpenAI's; anthropic has its own) and the NATS
// credentials the nats tools read. A provider's key left out here would
// reach the log the first time a model or a tool repeated it.
var DefaultNames = []string{
	"FACTLINE_OPENAI_API_KEY", "OPENAI_API_KEY",
	"FACTLINE_ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY",
	"NATS_TOKEN", "NATS_PASSWORD",
	"FACTLINE_NATS_TOKEN", "FACTLINE_NATS_PASSWORD",
}

// FromEnvironment builds the redactor of this process: the values of
// DefaultNames and of the variables FACTLINE_SECRET_ENV names, and the
// contents of the files FACTLINE_SECRET_FILES names. A named file that
// cannot be read is an error: a secret the redactor silently missed would
// reach the log.
func FromEnvironment() (*Redactor, error) {
	return Load(os.Getenv, DefaultNames, splitList(os.Getenv(EnvSecretNames)), splitList(os.Getenv(EnvSecretFiles)))
}

// NamedFiles returns the files FACTLINE_SECRET_FILES names, in the order
// named, so that a caller can look at who else may read or change them
// (FileExposure) as it does for a file a flag names.
func NamedFiles() []string { return splitList(os.Getenv(EnvSecretFiles)) }

// UnsetNamed returns the variables FACTLINE_SECRET_ENV names that are not
// set (or empty) in this process's environment, in the order named. Load
// skips them, as a process may rightly lack one; but a misspelt name
// protects nothing, so a caller should say which (factline warns).
func UnsetNamed() []string {
	var out []string
	for _, n := range splitList(os.Getenv(EnvSecretNames)) {
		if os.Getenv(n) == "" {
			out = append(out, n)
		}
	}
	return out
}

// Load builds a redactor from the values of the named environment
// variables (read through getenv; unset ones are skipped) and the contents
// of the named files.
func Load(getenv func(string) string, defaults, names, files []string) (*Redactor, error) {
	var all []Secret
	for _, n := range append(append([]string(nil), defaults...), names...) {
		if v := getenv(n); v != "" {
			all = append(all, fromValue(n, v)...)
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("secret file %s (named in %s): %w", f, EnvSecretFiles, err)
		}
		all = append(all, fromValue(filepath.Base(f), string(b))...)
	}
	return New(all...), nil
}

// fromValue is the secrets one value holds: the value itself (without
// surrounding space, as a file usually has a final newline) and, for a
// value made of PEM-style blocks like a NATS credentials file, each
// block's body, since a JWT or an nkey seed may appear alone.
func fromValue(name, v string) []Secret {
	out := []Secret{{Name: name, Value: strings.TrimSpace(v)}}
	lines := strings.Split(v, "\n")
	in := false
	var body []string
	for _, l := range lines {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "-----BEGIN") || strings.HasPrefix(l, "------BEGIN"):
			in, body = true, nil
		case in && (strings.HasPrefix(l, "-----END") || strings.HasPrefix(l, "------END")):
			in = false
			if b := strings.Join(body, "\n"); b != "" {
				out = append(out, Secret{Name: name, Value: b})
			}
			for _, line := range body {
				out = append(out, Secret{Name: name, Value: line})
			}
		case in && l != "":
			body = append(body, l)
		}
	}
	return out
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
