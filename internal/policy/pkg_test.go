package policy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestPackageHygiene enforces the package contract: a package doc comment
// saying what it owns and who may import it, imports limited to the
// standard library and sessionkey, and a doc comment on every exported
// identifier.
func TestPackageHygiene(t *testing.T) {
	const sessionkeyPath = "github.com/switchboardhq/switchboard/internal/sessionkey"
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var doc string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc != nil {
			doc += f.Doc.Text()
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(path, "/")
			if strings.Contains(first, ".") && path != sessionkeyPath {
				t.Errorf("%s imports %q: policy may import only the standard library and sessionkey", name, path)
			}
			if path == "os" || path == "net" || path == "net/http" || path == "io/fs" || path == "log" || path == "log/slog" || path == "time" {
				t.Errorf("%s imports %q: policy does no I/O and reads no clock", name, path)
			}
		}
		for _, decl := range f.Decls {
			checkDeclDocs(t, fset, decl)
		}
	}
	if !strings.HasPrefix(doc, "Package policy owns ") {
		t.Errorf("package doc should start %q, got %q", "Package policy owns ", doc)
	}
	if !strings.Contains(doc, "may import it") {
		t.Error("package doc should say who may import the package")
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
				if st, ok := s.Type.(*ast.StructType); ok && s.Name.IsExported() {
					for _, f := range st.Fields.List {
						for _, n := range f.Names {
							if n.IsExported() && f.Doc == nil && f.Comment == nil && !sharesDoc(st, f) {
								t.Errorf("%s: exported field %s.%s has no doc comment", fset.Position(n.Pos()), s.Name, n)
							}
						}
					}
				}
			case *ast.ValueSpec:
				for _, n := range s.Names {
					// A documented const/var block documents its members.
					if n.IsExported() && s.Doc == nil && s.Comment == nil && d.Doc == nil {
						t.Errorf("%s: exported %s has no doc comment", fset.Position(n.Pos()), n)
					}
				}
			}
		}
	}
}

// sharesDoc reports whether field f follows a run of fields that starts
// with a documented one, sharing its comment (as in
// "// A and B are …\nA string\nB string").
func sharesDoc(st *ast.StructType, f *ast.Field) bool {
	for i, g := range st.Fields.List {
		if g == f && i > 0 {
			prev := st.Fields.List[i-1]
			return prev.Doc != nil || sharesDoc(st, prev)
		}
	}
	return false
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
