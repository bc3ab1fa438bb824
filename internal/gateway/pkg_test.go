package gateway

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// allowedImports are the non-standard packages gateway may import: its own
// wire package, the leaves and contracts it builds on, and the WebSocket
// and UUID modules. Nothing that imports gateway (daemon, cli) and no
// concrete backend or provider.
var allowedImports = []string{
	"github.com/coder/websocket",
	"github.com/google/uuid",
	"github.com/switchboardhq/switchboard/internal/agent",
	"github.com/switchboardhq/switchboard/internal/config",
	"github.com/switchboardhq/switchboard/internal/gateway/wire",
	"github.com/switchboardhq/switchboard/internal/policy",
	"github.com/switchboardhq/switchboard/internal/sessionkey",
	"github.com/switchboardhq/switchboard/internal/store",
	"github.com/switchboardhq/switchboard/internal/subagent",
	"github.com/switchboardhq/switchboard/internal/tools",
	"github.com/switchboardhq/switchboard/internal/transcript",
}

// TestPackageHygiene enforces the package doc (what gateway owns and who
// may import it), the import allow list, and docs on exported identifiers.
func TestPackageHygiene(t *testing.T) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	hasDoc := false
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if doc := strings.Join(strings.Fields(f.Doc.Text()), " "); strings.HasPrefix(doc, "Package gateway owns ") && strings.Contains(doc, "Only the daemon imports this package") {
			hasDoc = true
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") && !slices.Contains(allowedImports, path) {
				t.Errorf("%s imports %q, which is not on gateway's allow list", name, path)
			}
		}
		for _, decl := range f.Decls {
			checkDeclDocs(t, fset, decl)
		}
	}
	if !hasDoc {
		t.Error(`missing package doc: "Package gateway owns ..." naming its importers`)
	}
}

func checkDeclDocs(t *testing.T, fset *token.FileSet, decl ast.Decl) {
	t.Helper()
	switch d := decl.(type) {
	case *ast.FuncDecl:
		if d.Name.IsExported() && (d.Recv == nil || recvExported(d.Recv)) && d.Doc == nil {
			t.Errorf("%s: exported func %s has no doc comment", fset.Position(d.Pos()), d.Name)
		}
	case *ast.GenDecl:
		for _, spec := range d.Specs {
			switch s := spec.(type) {
			case *ast.TypeSpec:
				if s.Name.IsExported() && s.Doc == nil && d.Doc == nil {
					t.Errorf("%s: exported type %s has no doc comment", fset.Position(s.Pos()), s.Name)
				}
			case *ast.ValueSpec:
				for _, n := range s.Names {
					if n.IsExported() && s.Doc == nil && s.Comment == nil && d.Doc == nil {
						t.Errorf("%s: exported %s has no doc comment", fset.Position(n.Pos()), n)
					}
				}
			}
		}
	}
}

func recvExported(recv *ast.FieldList) bool {
	if len(recv.List) == 0 {
		return false
	}
	typ := recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	id, ok := typ.(*ast.Ident)
	return ok && id.IsExported()
}
