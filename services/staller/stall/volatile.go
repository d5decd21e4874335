package stall

import "regexp"

// volatile lists what changes between two answers to the same question
// without saying anything new: clocks and dates, durations, process IDs,
// temporary paths, generated IDs. A job polled every turn whose status line
// starts with a clock is answering the same thing each time.
//
// Plain numbers and percentages are left alone: "40%" after "30%" is the
// progress polling waits for.
var volatile = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?`), "<time>"},
	{regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}\b`), "<date>"},
	{regexp.MustCompile(`\b\d{1,2}:\d{2}:\d{2}(\.\d+)?\b`), "<time>"},
	{regexp.MustCompile(`\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b`), "<id>"},
	{regexp.MustCompile(`\b(\d+h)?(\d+m)?\d+(\.\d+)?(ns|us|µs|ms|s)\b`), "<duration>"},
	{regexp.MustCompile(`(?i)\b(pid|process)([ =:#]+)\d+\b`), "${1}${2}<pid>"},
	{regexp.MustCompile(`(/tmp|/var/tmp|/var/folders)/[^\s'"):,;]+`), "${1}/<tmp>"},
	{regexp.MustCompile(`\b[0-9a-f]*[0-9][0-9a-f]*[a-f][0-9a-f]*\b|\b[0-9a-f]*[a-f][0-9a-f]*[0-9][0-9a-f]*\b`), "<hex>"},
}

// stable returns s with its volatile tokens replaced by placeholders, so
// that two answers differing only in them compare equal. Hex runs shorter
// than eight characters are words ("cafe", "beef") or small numbers and
// are kept.
func stable(s string) string {
	for _, v := range volatile {
		if v.with == "<hex>" {
			s = v.re.ReplaceAllStringFunc(s, func(m string) string {
				if len(m) < 8 {
					return m
				}
				return "<hex>"
			})
			continue
		}
		s = v.re.ReplaceAllString(s, v.with)
	}
	return s
}
