package cases

import "fmt"

// UnmarshalYAML reads a budget, refusing negative limits by name (a plain
// unsigned field would only say that -1 does not fit a uint32).
func (b *Budget) UnmarshalYAML(unmarshal func(any) error) error {
	var raw struct {
		Steps        int64    `yaml:"steps"`
		InputTokens  int64    `yaml:"input_tokens"`
		OutputTokens int64    `yaml:"output_tokens"`
		Wall         Duration `yaml:"wall"`
		Cost         int64    `yaml:"cost"`
	}
	if err := unmarshal(&raw); err != nil {
		return err
	}
	for name, v := range map[string]int64{"steps": raw.Steps, "input_tokens": raw.InputTokens, "output_tokens": raw.OutputTokens, "cost": raw.Cost} {
		if v < 0 {
			return fmt.Errorf("budget.%s: %d is negative (0 means no limit)", name, v)
		}
	}
	if raw.Steps > 1<<31 {
		return fmt.Errorf("budget.steps: %d is too many", raw.Steps)
	}
	*b = Budget{Steps: uint32(raw.Steps), InputTokens: uint64(raw.InputTokens), OutputTokens: uint64(raw.OutputTokens), Wall: raw.Wall, Cost: uint64(raw.Cost)}
	return nil
}
