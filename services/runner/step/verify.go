package step

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/factline/factline/events"
)

// maxDiagnostics bounds how many diagnostics one verification carries.
const maxDiagnostics = 50

// DiagnosticRule extracts diagnostics from a check's output, field for
// field the case's rule (cases.DiagnosticRule), which the runner converts:
// one diagnostic per line Pattern matches, with the named groups file,
// line, code and message. Complete says the pattern finds every error the
// check reports, so a shrinking set proves progress.
type DiagnosticRule struct {
	Pattern  string
	Complete bool
}

// VerificationOf turns a declared check's exit code and output into a
// verification at the given source epoch, reading diagnostics with the
// check's rule (nil: none). truncated says the output was cut, which makes
// any diagnostic set partial.
func VerificationOf(rule *DiagnosticRule, exitCode int, output string, truncated bool, epoch uint64) events.Verification {
	if exitCode == 0 {
		return events.Passed(epoch)
	}
	diags, complete := diagnose(rule, output)
	return events.Failed(epoch, complete && !truncated, diags...)
}

// diagnose reads diagnostics out of a check's output. Without a rule, or
// when the rule finds nothing, the last lines of output become one
// diagnostic and the set is partial.
func diagnose(rule *DiagnosticRule, output string) ([]events.Diagnostic, bool) {
	if rule != nil {
		re := regexp.MustCompile(rule.Pattern) // checked when the case was loaded
		var out []events.Diagnostic
		for _, line := range strings.Split(output, "\n") {
			m := re.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			d := events.Diagnostic{Message: group(re, m, "message")}
			if d.Message == "" {
				continue
			}
			d.File, d.Code = group(re, m, "file"), group(re, m, "code")
			if n, err := strconv.ParseUint(group(re, m, "line"), 10, 32); err == nil {
				d.Line = uint32(n)
			}
			out = append(out, d)
			if len(out) == maxDiagnostics {
				return out, false
			}
		}
		if len(out) > 0 {
			return out, rule.Complete
		}
	}
	return []events.Diagnostic{{Message: tailLines(output, 5, 500)}}, false
}

func group(re *regexp.Regexp, m []string, name string) string {
	if i := re.SubexpIndex(name); i > 0 && i < len(m) {
		return strings.TrimSpace(m[i])
	}
	return ""
}

// tailLines returns the last n non-empty lines of s, at most max bytes.
func tailLines(s string, n, max int) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := strings.Join(lines, "\n")
	if len(out) > max {
		out = out[len(out)-max:]
	}
	if out == "" {
		return "the check failed without output"
	}
	return out
}
