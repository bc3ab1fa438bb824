// Package docstest holds the tests that keep the README and docs/ true: every
// relative link and anchor resolves, and every section citation in Go code
// (a docs/spec page followed by a section sign and number) names a section
// summarised there. It has no code of its own.
package docstest
