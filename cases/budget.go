package cases

import (
	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
)

// MaxSteps bounds a budget's steps: more would never end in practice, and a
// run's step counter is 32 bits.
const MaxSteps = 1 << 31

// UnmarshalYAML reads a budget from a case file. Every limit is a whole
// number, refused by name and line when it is negative, fractional or not
// a number at all (a plain unsigned field would only say that -1 does not
// fit a uint32, naming a Go type).
func (b *Budget) UnmarshalYAML(node ast.Node) error {
	if _, null := node.(*ast.NullNode); null {
		*b = Budget{}
		return nil
	}
	if _, ok := node.(*ast.MappingNode); !ok {
		if _, ok := node.(*ast.MappingValueNode); !ok {
			return nodeErr(node, "want a mapping of steps, input_tokens, output_tokens, wall and cost, got %s", gotOf(node, nil))
		}
	}
	var raw struct {
		Steps        ast.Node `yaml:"steps"`
		InputTokens  ast.Node `yaml:"input_tokens"`
		OutputTokens ast.Node `yaml:"output_tokens"`
		Wall         Duration `yaml:"wall"`
		Cost         ast.Node `yaml:"cost"`
	}
	if err := yaml.NodeToValue(node, &raw, yaml.Strict()); err != nil {
		return err
	}
	const noLimit = " (0 means no limit)"
	steps, err := wholeNumber(raw.Steps, MaxSteps, " (0 means the default)")
	if err != nil {
		return err
	}
	in, err := wholeNumber(raw.InputTokens, 1<<63-1, noLimit)
	if err != nil {
		return err
	}
	out, err := wholeNumber(raw.OutputTokens, 1<<63-1, noLimit)
	if err != nil {
		return err
	}
	cost, err := wholeNumber(raw.Cost, 1<<63-1, noLimit)
	if err != nil {
		return err
	}
	*b = Budget{Steps: uint32(steps), InputTokens: in, OutputTokens: out, Wall: raw.Wall, Cost: cost}
	return nil
}
