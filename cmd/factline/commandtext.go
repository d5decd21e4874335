package main

import (
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/goccy/go-yaml"
	"github.com/spf13/cobra"
)

// commandsYAML holds every command's words (commands.yaml): the help of all
// commands in one table, so that their usage lines, list entries and
// examples read alike and are reviewed together, apart from their code.
//
//go:embed commands.yaml
var commandsYAML []byte

// commandText is what one command says about itself.
type commandText struct {
	Use      string   `yaml:"use"`
	Short    string   `yaml:"short"`
	Long     string   `yaml:"long"`
	Examples []string `yaml:"examples"`
}

// parseCommandTexts reads a table of command words, keyed by the command's
// path below factline ("factline" for the root itself). An entry without a
// usage line or a list entry, or whose usage line does not start with its
// command's name, is an error naming the entry.
func parseCommandTexts(data []byte) (map[string]commandText, error) {
	var texts map[string]commandText
	if err := yaml.UnmarshalWithOptions(data, &texts, yaml.Strict(), yaml.DisallowUnknownField()); err != nil {
		return nil, fmt.Errorf("command words: %w", err)
	}
	for path, t := range texts {
		words := strings.Fields(path)
		if len(words) == 0 {
			return nil, errors.New("command words: an entry has an empty path")
		}
		name := words[len(words)-1]
		if t.Use != name && !strings.HasPrefix(t.Use, name+" ") {
			return nil, fmt.Errorf("command words: %q: use %q does not start with the command's name %q", path, t.Use, name)
		}
		if t.Short == "" {
			return nil, fmt.Errorf("command words: %q: no short line for the command list", path)
		}
	}
	return texts, nil
}

// commandTexts is commands.yaml, read once. It is part of the binary, so a
// broken one is a broken build, which every test that builds the command
// tree shows.
var commandTexts = sync.OnceValue(func() map[string]commandText {
	texts, err := parseCommandTexts(commandsYAML)
	if err != nil {
		panic(err)
	}
	return texts
})

// newCommand makes the command at path below factline (e.g. "suite pause")
// with its words from commands.yaml; args checks its positional arguments.
// The caller adds the command's flags and work.
func newCommand(path string, args cobra.PositionalArgs) *cobra.Command {
	t, ok := commandTexts()[path]
	if !ok {
		panic(fmt.Sprintf("command words: commands.yaml has no entry %q", path))
	}
	c := &cobra.Command{Use: t.Use, Short: t.Short, Long: t.Long, Args: args}
	if len(t.Examples) > 0 {
		c.Example = "  " + strings.Join(t.Examples, "\n  ")
	}
	return c
}
