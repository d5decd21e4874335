package runner

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/factline/factline/cases"
	"github.com/factline/factline/models"
	"github.com/factline/factline/services/runner/step"
)

// fill sets every field of v, recursively, to a value of its own (no
// zero values, slices of two), so that a field added to either side of a
// conversion is filled and must come out on the other.
func fill(v reflect.Value, seed *int) {
	*seed++
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i), seed)
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), seed)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(v.Index(i), seed)
		}
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", *seed))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*seed))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*seed))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(*seed) + 0.5)
	default:
		panic(fmt.Sprintf("fill: %s", v.Type()))
	}
}

// sameFields reports every difference between from and its conversion
// to, field by field under the same names: a field either side has and the
// other lacks (except those named in skip, by path), a value that differs,
// or nil against empty.
func sameFields(from, to reflect.Value, path string, skip map[string]bool) []string {
	if from.Kind() != to.Kind() {
		return []string{fmt.Sprintf("%s: %s against %s", path, from.Type(), to.Type())}
	}
	var out []string
	switch from.Kind() {
	case reflect.Struct:
		for i := range from.NumField() {
			name := from.Type().Field(i).Name
			if skip[path+"."+name] {
				continue
			}
			f := to.FieldByName(name)
			if !f.IsValid() {
				out = append(out, fmt.Sprintf("%s.%s: %s has no such field", path, name, to.Type()))
				continue
			}
			out = append(out, sameFields(from.Field(i), f, path+"."+name, skip)...)
		}
		for i := range to.NumField() {
			name := to.Type().Field(i).Name
			if !from.FieldByName(name).IsValid() {
				out = append(out, fmt.Sprintf("%s.%s: %s has no such field", path, name, from.Type()))
			}
		}
	case reflect.Pointer, reflect.Slice:
		if from.IsNil() != to.IsNil() {
			return []string{fmt.Sprintf("%s: nil is %v against %v", path, from.IsNil(), to.IsNil())}
		}
		if from.Kind() == reflect.Pointer {
			if !from.IsNil() {
				out = sameFields(from.Elem(), to.Elem(), path, skip)
			}
			break
		}
		if from.Len() != to.Len() {
			return []string{fmt.Sprintf("%s: %d elements against %d", path, from.Len(), to.Len())}
		}
		for i := range from.Len() {
			out = append(out, sameFields(from.Index(i), to.Index(i), fmt.Sprintf("%s[%d]", path, i), skip)...)
		}
	default:
		if fmt.Sprint(from.Interface()) != fmt.Sprint(to.Interface()) {
			out = append(out, fmt.Sprintf("%s: %v against %v", path, from.Interface(), to.Interface()))
		}
	}
	return out
}

// conversionIsLossless fills a value of type From, converts it and checks
// that every field arrived.
func conversionIsLossless[From, To any](t *testing.T, convert func(From) To, skip ...string) {
	t.Helper()
	var in From
	seed := 0
	fill(reflect.ValueOf(&in).Elem(), &seed)
	out := convert(in)
	sk := map[string]bool{}
	for _, s := range skip {
		sk[s] = true
	}
	for _, d := range sameFields(reflect.ValueOf(in), reflect.ValueOf(out), reflect.TypeOf(in).String(), sk) {
		t.Error(d)
	}
}

// The core's budget is the case's budget less the wall-time limit, which
// needs a clock and stays in the shell.
func TestBudgetConversionIsLossless(t *testing.T) {
	conversionIsLossless(t, budgetOf, "cases.Budget.Wall")
}

// A history's messages reach the model port with every field, nil kept
// apart from empty, and the same roles; the context policy reaches the
// core with every field (a type conversion: the build stops when the two
// drift) and the same modes.
func TestHistoryConversionIsLossless(t *testing.T) {
	conversionIsLossless(t, messagesOf)
	conversionIsLossless(t, contextOf)
	if messagesOf(nil) != nil {
		t.Error("no messages became some")
	}
	if m := messagesOf([]step.Message{{Role: step.RoleAssistant, ToolCalls: []step.ToolCall{}}}); m[0].ToolCalls == nil {
		t.Error("an empty list of calls became nil")
	}
	for core, port := range map[step.Role]models.Role{step.RoleSystem: models.RoleSystem, step.RoleUser: models.RoleUser,
		step.RoleAssistant: models.RoleAssistant, step.RoleTool: models.RoleTool} {
		if string(core) != string(port) {
			t.Errorf("role %q is %q at the model port", core, port)
		}
	}
	if step.ContextFull != cases.ContextFull || step.ContextWindow != cases.ContextWindow || step.ContextSummarise != cases.ContextSummarise {
		t.Error("the core's context modes are not the case file's")
	}
}

// A check's diagnostic rule reaches the core with every field, and none
// stays none.
func TestRuleConversionIsLossless(t *testing.T) {
	conversionIsLossless(t, ruleOf)
	if ruleOf(nil) != nil {
		t.Error("no rule became one")
	}
}

// The checker itself catches a dropped field.
func TestSameFieldsCatchesADroppedField(t *testing.T) {
	var in cases.Budget
	seed := 0
	fill(reflect.ValueOf(&in).Elem(), &seed)
	out := budgetOf(in)
	out.Cost = 0
	d := sameFields(reflect.ValueOf(in), reflect.ValueOf(out), "Budget", map[string]bool{"Budget.Wall": true})
	if len(d) != 1 {
		t.Fatalf("a dropped cost: %q", d)
	}
	if d := sameFields(reflect.ValueOf(cases.Budget{}), reflect.ValueOf(step.Budget{}), "Budget", nil); len(d) != 1 {
		t.Fatalf("a field the core lacks: %q", d)
	}
}
