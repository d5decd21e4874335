package main

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/factline/factline/events"
)

// checkFactFilter refuses, as a usage error, a subject filter that can
// select no fact: the server would answer an empty token with no
// responders and white space as an invalid subject, naming neither the
// filter nor the rule, and a filter outside fact. matches nothing in
// silence. what names where the filter was given (FILTER, --filter).
func checkFactFilter(what, filter string) error {
	bad := func(why string) error {
		return usageError{fmt.Sprintf("%s %q: %s (a fact's subject is fact.SUITE.RUN.KIND; * stands for one token, > for the rest: docs/subjects.md)", what, filter, why)}
	}
	if strings.IndexFunc(filter, unicode.IsSpace) >= 0 {
		return bad("white space is no part of a subject")
	}
	tokens := strings.Split(filter, ".")
	for i, tok := range tokens {
		switch {
		case tok == "":
			return bad(fmt.Sprintf("token %d is empty", i+1))
		case tok == ">" && i != len(tokens)-1:
			return bad(`">" may only be the last token`)
		}
	}
	if first := tokens[0]; first != events.FactPrefix && first != "*" && first != ">" {
		return bad("facts' subjects start with fact.")
	}
	return nil
}
