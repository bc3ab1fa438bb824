package sanitize

import (
	"regexp"
	"sync"
)

// lazyRE is a pattern compiled on its first use. The package's patterns are
// declared as composite literals of it so that importing sanitize costs
// nothing at process start: no regexp compiled and no init function run
// (compiling them all took about 1 ms and 0.5 MB before main; building a
// sync.OnceValue per pattern still ran an init touching the package's code).
type lazyRE struct {
	once sync.Once
	expr string        // the pattern, when it is a constant
	src  func() string // builds the pattern, when it is not
	re   *regexp.Regexp
}

// get compiles the pattern on the first call and returns the same
// *regexp.Regexp after that.
func (l *lazyRE) get() *regexp.Regexp {
	l.once.Do(func() {
		expr := l.expr
		if l.src != nil {
			expr = l.src()
		}
		l.re = regexp.MustCompile(expr)
	})
	return l.re
}
