// Package safeerr marks errors whose text is safe to show to a client.
//
// A gateway answers bad requests with the reason ("not an announce: x"),
// but an error from the database or the file system may carry paths, SQL
// or other internals that must not reach a client. Code that builds an
// error meant for the caller wraps it with New or Errorf; the front doors
// show the text of such errors and log every other error, answering the
// client with a generic message.
package safeerr

import (
	"errors"
	"fmt"
)

// Error is an error whose message is safe to show to a client.
type Error struct{ err error }

// Error returns the message.
func (e *Error) Error() string { return e.err.Error() }

// Unwrap returns the wrapped error.
func (e *Error) Unwrap() error { return e.err }

// New returns a client-safe error with the message text.
func New(text string) error { return &Error{errors.New(text)} }

// Errorf formats a client-safe error. %w wraps as fmt.Errorf does; the
// wrapped error's text becomes part of the message, so wrap only errors
// that are themselves safe to show.
func Errorf(format string, args ...any) error { return &Error{fmt.Errorf(format, args...)} }

// Message returns the client-safe text of err, when err is or wraps an
// Error, and whether it is one. The text is that of the outermost Error in
// err's chain (context added around it by the server is not shown).
func Message(err error) (string, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.Error(), true
	}
	return "", false
}
