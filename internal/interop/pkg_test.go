package interop

import (
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// allowedImports are the non-standard packages interop may import. Nothing from
// Switchboard: any package's tests can use interop without an import cycle.
var allowedImports = []string{
	"github.com/dlclark/regexp2",
	"github.com/santhosh-tekuri/jsonschema/v6",
}

func TestPackageHygiene(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	hasDoc := false
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc != nil {
			doc := f.Doc.Text()
			hasDoc = true
			for _, want := range []string{"owns", "Test-only", "import"} {
				if !strings.Contains(doc, want) {
					t.Errorf("%s: package doc does not say %q (what it owns, who may import it)", name, want)
				}
			}
		}
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			if strings.Contains(strings.SplitN(path, "/", 2)[0], ".") && !slices.Contains(allowedImports, path) {
				t.Errorf("%s imports %s (allowed: %v)", name, path, allowedImports)
			}
		}
	}
	if !hasDoc {
		t.Error("no package doc comment")
	}
}
