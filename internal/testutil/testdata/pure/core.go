package core

import (
	"strings"

	"github.com/factline/factline/events"
)

var _ = strings.Cut
var _ events.Kind
