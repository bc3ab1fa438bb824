package tools

import (
	"errors"
	"fmt"
)

// InputError is a tool error caused by the caller's arguments (missing or
// malformed parameters), as opposed to a failure while the tool ran. The
// HTTP /tools/invoke surface answers it with 400 and its message, like the
// reference's ToolInputError; other errors become a sanitised 500.
type InputError struct {
	Msg string
}

// Error returns the message.
func (e *InputError) Error() string { return e.Msg }

// InputErrorf returns an *InputError with a formatted message.
func InputErrorf(format string, args ...any) error {
	return &InputError{Msg: fmt.Sprintf(format, args...)}
}

// IsInputError reports whether err is or wraps an *InputError.
func IsInputError(err error) bool {
	var ie *InputError
	return errors.As(err, &ie)
}
