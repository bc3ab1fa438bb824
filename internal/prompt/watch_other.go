//go:build !linux

package prompt

// changeWatch is not available without inotify: the cache stats every
// bootstrap file on every turn.
type changeWatch struct{}

func newChangeWatch() *changeWatch            { return nil }
func (w *changeWatch) add(string) (int, bool) { return -1, false }
func (w *changeWatch) changed() bool          { return true }
