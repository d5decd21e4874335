package runner

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/factline/factline/bus"
	"github.com/factline/factline/events"
	"github.com/factline/factline/models"
	"github.com/factline/factline/secrets"
	"github.com/factline/factline/services/runner/tools"
)

const testSecret = "tok-3b1f9a7c5e2d"

var testRedactor = secrets.New(secrets.Secret{Name: "TOKEN", Value: testSecret})

func TestRedactErrKeepsIdentity(t *testing.T) {
	base := errors.New("dial failed with " + testSecret)
	err := redactErr(testRedactor, bus.Permanent(fmt.Errorf("wrapped: %w", base)))
	if strings.Contains(err.Error(), testSecret) || !strings.Contains(err.Error(), secrets.Marker("TOKEN")) {
		t.Errorf("error text %q", err)
	}
	if !errors.Is(err, base) {
		t.Error("errors.Is lost the cause")
	}
	plain := errors.New("nothing secret")
	if redactErr(testRedactor, plain) != plain || redactErr(testRedactor, nil) != nil {
		t.Error("an error without a secret was changed")
	}
}

func TestRedactBodyCoversFreeText(t *testing.T) {
	s := "x " + testSecret
	bodies := []events.Body{
		events.DispatchCompleted{Output: s, Error: &events.ToolError{Code: "IO_ERROR", Message: s}},
		events.RunEnded{Reason: s, NextAction: s},
		events.ControlAccepted{Instruction: s, Reason: s},
		events.TaskGenerationStarted{Instruction: s},
	}
	for _, b := range bodies {
		if got := fmt.Sprintf("%+v", redactBody(testRedactor, b)); strings.Contains(got, testSecret) {
			t.Errorf("%s: %s", b.Kind(), got)
		}
	}
	res := redactResult(testRedactor, tools.Result{Output: s, Err: &events.ToolError{Message: s}})
	if strings.Contains(res.Output+res.Err.Message, testSecret) {
		t.Errorf("tool result: %+v", res)
	}
	reply := redactReply(testRedactor, models.Reply{Text: s, Model: s, Calls: []models.ToolCall{{ID: s, Name: s, Args: s}}})
	if strings.Contains(fmt.Sprintf("%+v", reply), testSecret) {
		t.Errorf("reply: %+v", reply)
	}
}
