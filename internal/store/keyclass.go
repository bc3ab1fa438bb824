package store

import "github.com/switchboardhq/switchboard/internal/sessionkey"

// KeyClass is a set of the classes a session key falls in, stored with the
// session so that listings can leave classes out in the query itself.
type KeyClass uint8

// The key classes, after the sessionkey predicates.
const (
	ClassCronRun  KeyClass = 1 << iota // sessionkey.IsCronRun
	ClassCron                          // sessionkey.IsCron
	ClassSubagent                      // sessionkey.IsSubagent
	ClassGlobal                        // the reserved "global" key
	ClassUnknown                       // the reserved "unknown" key
)

// ClassOf returns the classes of a canonical session key.
func ClassOf(key string) KeyClass {
	var c KeyClass
	if sessionkey.IsCronRun(key) {
		c |= ClassCronRun
	}
	if sessionkey.IsCron(key) {
		c |= ClassCron
	}
	if sessionkey.IsSubagent(key) {
		c |= ClassSubagent
	}
	switch key {
	case sessionkey.GlobalKey:
		c |= ClassGlobal
	case sessionkey.UnknownKey:
		c |= ClassUnknown
	}
	return c
}
