package interop_test

import (
	"fmt"

	"github.com/switchboardhq/switchboard/internal/interop"
)

// A gateway test feeds every frame of a connection to a Checker: frames and params
// against the published schema, payloads leniently (the reference adds fields).
func ExampleChecker() {
	s, err := interop.Load() // in a test: interop.RequireSchema(t)
	if err != nil {
		fmt.Println(err)
		return
	}
	lenient, err := s.Lenient()
	if err != nil {
		fmt.Println(err)
		return
	}
	c := interop.NewChecker(s, lenient)
	for _, f := range []struct {
		fromClient bool
		frame      string
	}{
		{true, `{"type":"req","id":"1","method":"chat.send","params":{"sessionKey":"main","message":"hi","idempotencyKey":"k1"}}`},
		{false, `{"type":"res","id":"1","ok":true,"payload":{"runId":"k1","status":"started"}}`},
		{false, `{"type":"event","event":"tick","payload":{"ts":1795301135563},"seq":3}`},
	} {
		check := c.Server
		if f.fromClient {
			check = c.Client
		}
		if err := check([]byte(f.frame)); err != nil {
			fmt.Println(err)
		}
	}
}
