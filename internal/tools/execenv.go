package tools

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// BlockedExecEnv reports whether a model may not set the environment
// variable key for a host command, neither through exec's env argument
// nor by an assignment before the command ("LD_PRELOAD=/x head"): PATH and
// the loader and shell start-up variables that would let it run other
// code than the command names.
func BlockedExecEnv(key string) bool {
	k := strings.ToUpper(key)
	switch k {
	case "PATH", "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "IFS", "PS4":
		return true
	}
	return strings.HasPrefix(k, "LD_") || strings.HasPrefix(k, "DYLD_") || strings.HasPrefix(k, "BASH_FUNC_")
}

// ExecEnvViolation is the reference's refusal of blocked or malformed
// environment keys of a host command, nil when there are none.
func ExecEnvViolation(blocked, invalid []string) error {
	if len(blocked) == 0 && len(invalid) == 0 {
		return nil
	}
	blocked, invalid = slices.Sorted(slices.Values(blocked)), slices.Sorted(slices.Values(invalid))
	pathBlocked := slices.ContainsFunc(blocked, func(k string) bool { return strings.EqualFold(k, "PATH") })
	if len(invalid) == 0 && len(blocked) == 1 {
		if pathBlocked {
			return errors.New("Security Violation: Custom 'PATH' variable is forbidden during host execution.")
		}
		return fmt.Errorf("Security Violation: Environment variable '%s' is forbidden during host execution.", blocked[0])
	}
	var parts []string
	if len(blocked) > 0 {
		parts = append(parts, "blocked override keys: "+strings.Join(blocked, ", "))
	}
	if len(invalid) > 0 {
		parts = append(parts, "invalid non-portable override keys: "+strings.Join(invalid, ", "))
	}
	suffix := strings.Join(parts, "; ")
	if pathBlocked {
		return fmt.Errorf("Security Violation: Custom 'PATH' variable is forbidden during host execution (%s).", suffix)
	}
	return fmt.Errorf("Security Violation: %s.", suffix)
}
