package main

import (
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/factline/factline/secrets"
)

// LogLevelEnv is the environment variable a command's log level is read
// from when no --log-level is given (docs/cli.md#logging).
const LogLevelEnv = "FACTLINE_LOG_LEVEL"

// logLevel is the level of the process's log handler (main builds it):
// warnings and errors unless --log-level or $FACTLINE_LOG_LEVEL says
// otherwise.
var logLevel = func() *slog.LevelVar {
	v := new(slog.LevelVar)
	v.Set(slog.LevelWarn)
	return v
}()

// logLevels are the levels --log-level takes, in order.
var logLevels = []struct {
	name  string
	level slog.Level
}{{"debug", slog.LevelDebug}, {"info", slog.LevelInfo}, {"warn", slog.LevelWarn}, {"error", slog.LevelError}}

// parseLogLevel reads a level by its name (any case).
func parseLogLevel(s string) (slog.Level, bool) {
	for _, l := range logLevels {
		if strings.EqualFold(s, l.name) {
			return l.level, true
		}
	}
	return 0, false
}

// logLevelFlag adds --log-level to the root, for every command: each
// logs through the one handler main builds.
func logLevelFlag(root *cobra.Command) {
	root.PersistentFlags().String("log-level", "", "what the command logs (to stderr): debug, info, warn or error (default warn, or $"+LogLevelEnv+")")
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		lvl, err := chosenLogLevel(c)
		if err != nil {
			return err
		}
		logLevel.Set(lvl)
		for _, n := range secrets.UnsetNamed() {
			// Skipped, as a process may lack it; but a misspelt name would
			// leave the secret it meant unredacted without a word. Said
			// once the level is known: a warning like any other.
			slog.Warn("a variable "+secrets.EnvSecretNames+" names is not set in this process: nothing of it is redacted", "variable", n)
		}
		return nil
	}
}

// chosenLogLevel is the level --log-level gives, else $FACTLINE_LOG_LEVEL,
// else warn; a value that is no level is a usage error naming it.
func chosenLogLevel(c *cobra.Command) (slog.Level, error) {
	const want = "want debug, info, warn or error"
	if f := c.Flags().Lookup("log-level"); f != nil && f.Changed {
		lvl, ok := parseLogLevel(f.Value.String())
		if !ok {
			return 0, usageError{fmt.Sprintf("--log-level %q is no log level: %s", f.Value.String(), want)}
		}
		return lvl, nil
	}
	if v, set := os.LookupEnv(LogLevelEnv); set {
		lvl, ok := parseLogLevel(v)
		if !ok {
			return 0, usageError{fmt.Sprintf("%s=%q is no log level: %s (or unset it: warn)", LogLevelEnv, v, want)}
		}
		return lvl, nil
	}
	return slog.LevelWarn, nil
}
