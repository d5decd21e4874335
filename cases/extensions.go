package cases

import (
	"fmt"
	"slices"

	"github.com/factline/factline/events"
)

// checkExtensions checks the extension names a case lists: each a token,
// none twice. Whether the runner admits them is decided at run time
// against its allowlist.
func checkExtensions(field string, names []string) error {
	for i, n := range names {
		f := fmt.Sprintf("%s[%d]", field, i)
		if err := events.ValidateToken("extension", n); err != nil {
			return tokenErr(f, err)
		}
		if slices.Contains(names[:i], n) {
			return fieldErr(f, "extension %q is listed twice", n)
		}
	}
	return nil
}
