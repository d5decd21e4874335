package scripted

import (
	"fmt"

	"github.com/factline/factline/models"
)

// obeyChoice checks turn n's scripted calls against the request's tool
// choice. A script answers by turn whatever the request demands, and its
// output format is taken without effect (the script's text is what it
// is); but calls a forced choice rules out are a reply no provider would
// give, so the script and the agent's program disagree, and that is said
// rather than played.
func obeyChoice(n int, calls []models.ToolCall, c *models.ToolChoice) error {
	if c == nil {
		return nil
	}
	var err error
	switch c.Mode {
	case models.ToolChoiceNone:
		if len(calls) > 0 {
			err = fmt.Errorf("turn %d: the script calls %s, but the request's tool_choice is none", n, calls[0].Name)
		}
	case models.ToolChoiceRequired:
		if len(calls) == 0 {
			err = fmt.Errorf("turn %d: the script calls no tool, but the request's tool_choice is required", n)
		}
	case models.ToolChoiceTool:
		if len(calls) == 0 {
			err = fmt.Errorf("turn %d: the script calls no tool, but the request's tool_choice forces %s", n, c.Name)
		}
		for _, call := range calls {
			if call.Name != c.Name {
				err = fmt.Errorf("turn %d: the script calls %s, but the request's tool_choice forces %s", n, call.Name, c.Name)
				break
			}
		}
	}
	if err != nil {
		return &models.Error{Kind: models.ErrBadResponse, Provider: Provider, Attempts: 1, Err: err}
	}
	return nil
}
