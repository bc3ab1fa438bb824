// Package escapetest holds the sandbox escape tests: each attempt is a
// sandboxed exec asked for by the fake model through the real gateway.
// They need bubblewrap; under CI=true a missing backend fails them.
package escapetest
