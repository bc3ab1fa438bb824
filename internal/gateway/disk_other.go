//go:build !unix

package gateway

// diskSpace is unknown off Unix.
func diskSpace(string) (total, avail int64, ok bool) { return 0, 0, false }
