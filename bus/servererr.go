package bus

import (
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

// serverError returns a publish's error as the server's own: nats.go wraps
// a server's refusal (a *jetstream.APIError, whose text already starts
// "nats: ") in a second "nats: ", which would make every message that
// quotes it say "nats: nats: …". The API error it returns instead is the
// same refusal, matched the same way (errors.As, its error code).
func serverError(err error) error {
	var api *jetstream.APIError
	if errors.As(err, &api) && err.Error() == "nats: "+api.Error() {
		return api
	}
	return err
}
