package httpmodel

import (
	"context"
	"net/http"
	"time"

	"github.com/factline/factline/models"
)

// Send makes one HTTP call of a provider's SDK under ctx, leaving the
// reply's raw body in raw and its response in resp: each SDK has its own
// request options for that, so the provider supplies the call.
type Send func(ctx context.Context, raw *[]byte, resp **http.Response) error

// Attempt makes one call through send within timeout and maps its
// outcome: a transport error or an HTTP status through e, a body parse
// cannot read as ErrBadResponse (never retried), and the reply's usage
// priced by p.
func (e Errors) Attempt(ctx context.Context, timeout time.Duration, p Prices, send Send, parse func([]byte) (models.Reply, error)) (models.Reply, *Failure) {
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var (
		raw  []byte
		resp *http.Response
	)
	err := send(actx, &raw, &resp)
	if f := e.Check(Exchange{Ctx: ctx, Attempt: actx, Timeout: timeout, Resp: resp, Err: err}); f != nil {
		return models.Reply{}, f
	}
	reply, perr := parse(raw)
	if perr != nil {
		return models.Reply{}, e.Fail(models.ErrBadResponse, resp.StatusCode, false, perr, nil)
	}
	if reply.Usage != nil {
		reply.Usage.Cost = p.Of(*reply.Usage)
	}
	return reply, nil
}
