package irc

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind: every
// client goroutine must end with Close.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
