package httpmodel

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/factline/factline/models"
)

// Through a bounded client, an answer past the bound fails the attempt
// as a bad response that names the bound and is not retried (the path
// the Anthropic and Responses providers take); one within it is parsed.
func TestAnAnswerPastTheBoundIsABadResponse(t *testing.T) {
	answer := strings.Repeat("x", 5000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		_, _ = io.WriteString(w, answer)
	}))
	defer srv.Close()
	e := Errors{Provider: "p", Redact: Redactor(""), Now: time.Now, Detail: func([]byte) (string, string) { return "", "" }}
	for _, limit := range []int64{1000, 5000} {
		client := BoundReplies(&http.Client{}, limit)
		send := func(ctx context.Context, raw *[]byte, resp **http.Response) error {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
			r, err := client.Do(req)
			if err != nil {
				return err
			}
			*resp = r
			defer r.Body.Close()
			*raw, err = io.ReadAll(r.Body)
			if err != nil {
				return fmt.Errorf("error reading response body: %w", err)
			}
			return nil
		}
		reply, f := e.Attempt(context.Background(), time.Minute, Prices{}, send, func(b []byte) (models.Reply, error) {
			return models.Reply{Text: string(b)}, nil
		})
		if limit == 5000 {
			if f != nil || reply.Text != answer {
				t.Fatalf("an answer of the bound: %v, %d bytes", f, len(reply.Text))
			}
			continue
		}
		if f == nil || f.Err.Kind != models.ErrBadResponse || f.Retry {
			t.Fatalf("got %+v, want a bad response not retried", f)
		}
		if !strings.Contains(f.Err.Error(), "1000-byte limit") {
			t.Fatalf("%v does not name the bound", f.Err)
		}
	}
}
