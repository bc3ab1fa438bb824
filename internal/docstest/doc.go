// Package docstest holds the tests that keep the README and docs/ true: every
// relative link and anchor resolves. It has no code of its own.
package docstest
