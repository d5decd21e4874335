package testutil

import "testing"

func TestDoubledPrefixFindsAPrefixSaidAgain(t *testing.T) {
	for msg, want := range map[string]string{
		"nats: nats: no responders":                                               "nats",
		"factline decode: decode: decode x.msg: no fact":                          "decode",
		"factline suite pause: factline suite pause tiny: decide tiny/_suite: x":  "factline suite pause",
		"factline suite pause: suite tiny: pause refused: suite tiny is reported": "",
		"append to s/r: wrong last sequence":                                      "",
		"id: empty subject token":                                                 "",
		"":                                                                        "",
	} {
		if got := DoubledPrefix(msg); got != want {
			t.Errorf("DoubledPrefix(%q) = %q, want %q", msg, got, want)
		}
	}
}
