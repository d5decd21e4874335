package agentproxy_test

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/factline/factline/services/runner/agentproxy"
)

// Each wire answers a reply whole as JSON, or streamed as server-sent
// events, under an ID of the API's own form.
func TestEachWireAnswersWholeOrStreamedWithItsIDs(t *testing.T) {
	var calls int
	s := start(t, answering("hi there", &calls))
	for _, c := range []struct {
		path, body string
		id         *regexp.Regexp
	}{
		{agentproxy.ChatPath, `{"model":"x","messages":[{"role":"user","content":"hello"}]}`, regexp.MustCompile(`"id":"chatcmpl-[0-9]+"`)},
		{agentproxy.ResponsesPath, `{"model":"x","input":"hello"}`, regexp.MustCompile(`"id":"resp_[0-9]+"`)},
		{agentproxy.MessagesPath, `{"model":"x","max_tokens":5,"messages":[{"role":"user","content":"hello"}]}`, regexp.MustCompile(`"id":"msg_[0-9]+"`)},
	} {
		for _, stream := range []bool{false, true} {
			body := c.body
			wantType := "application/json"
			if stream {
				body = `{"stream":true,` + body[1:]
				wantType = "text/event-stream"
			}
			req, err := http.NewRequest(http.MethodPost, s.Origin()+c.path, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+s.Token())
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != wantType {
				t.Errorf("%s stream=%v: HTTP %d %s, %s; want 200 %s", c.path, stream, resp.StatusCode, resp.Header.Get("Content-Type"), got, wantType)
			}
			if !c.id.Match(got) || !strings.Contains(string(got), "hi there") {
				t.Errorf("%s stream=%v: %s; want the text under an ID matching %s", c.path, stream, got, c.id)
			}
			streamed := strings.HasPrefix(string(got), "data: ") || strings.HasPrefix(string(got), "event: ")
			if streamed != stream {
				t.Errorf("%s stream=%v: body %.60s… is not what was asked for", c.path, stream, got)
			}
		}
	}
	if calls != 6 {
		t.Errorf("the attempt was called %d times, want 6", calls)
	}
}
