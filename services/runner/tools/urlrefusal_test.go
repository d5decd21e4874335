package tools

import (
	"encoding/json"
	"strings"
	"testing"
)

// A URL the task does not allow is refused saying so with the URL once:
// the message once read "http://…/apix is not an endpoint this task may
// call: http://…/apix: no allow entry covers http://…/apix". One the
// allowlist reads otherwise than written says how it read it.
func TestURLNotAllowedNamesTheURLOnce(t *testing.T) {
	env := httpEnv(t, "http://127.0.0.1:18090/api")
	for _, c := range []struct{ url, want string }{
		{"http://127.0.0.1:18090/apix", "http://127.0.0.1:18090/apix is not an endpoint this task may call: no allow entry covers it"},
		{"http://LOCALHOST:18090/x", "http://LOCALHOST:18090/x is not an endpoint this task may call: no allow entry covers it (read as http://localhost:18090/x)"},
		{"http://u@127.0.0.1:18090/api", "http://u@127.0.0.1:18090/api is not an endpoint this task may call: "},
	} {
		raw, _ := json.Marshal(map[string]string{"url": c.url})
		res := HTTPCall{}.Precheck(env, raw)
		if res == nil || res.Err == nil || res.Err.Code != CodeURLNotAllowed {
			t.Fatalf("%s: %+v, want %s", c.url, res, CodeURLNotAllowed)
		}
		msg := res.Err.Message
		if !strings.HasPrefix(msg, c.want) || strings.Count(msg, c.url) != 1 {
			t.Errorf("%s: %q, want %q with the URL once", c.url, msg, c.want)
		}
	}
}
