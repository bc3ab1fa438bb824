// Package archtest holds repository-wide checks of the package layout: which
// internal packages may import which, and that every package documents what
// it owns. It has tests only.
package archtest

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/switchboardhq/switchboard"

type pkgInfo struct {
	dir     string
	imports map[string]bool // non-test imports
	doc     bool
}

// loadPackages parses every non-test Go file under the repository.
func loadPackages(t *testing.T) map[string]*pkgInfo {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	pkgs := map[string]*pkgInfo{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		ip := module
		if rel != "." {
			ip += "/" + filepath.ToSlash(rel)
		}
		p := pkgs[ip]
		if p == nil {
			p = &pkgInfo{dir: rel, imports: map[string]bool{}}
			pkgs[ip] = p
		}
		if f.Doc != nil && strings.TrimSpace(f.Doc.Text()) != "" {
			p.doc = true
		}
		for _, im := range f.Imports {
			p.imports[strings.Trim(im.Path.Value, `"`)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

func TestEveryPackageHasDoc(t *testing.T) {
	for ip, p := range loadPackages(t) {
		if !p.doc {
			t.Errorf("%s has no package doc comment", ip)
		}
	}
}

// leaves may import only the standard library plus the listed packages;
// they never import their users.
var leaves = map[string][]string{
	"internal/sessionkey": nil,
	"internal/transcript": nil,
	"internal/provider":   nil,
	"internal/tools":      nil,
	"internal/policy":     {"internal/sessionkey"},
	"internal/sanitize":   {"internal/transcript"},
	"internal/store":      {"internal/transcript", "internal/sessionkey", "github.com/google/uuid"},
}

func TestLeafImports(t *testing.T) {
	pkgs := loadPackages(t)
	for leaf, allowed := range leaves {
		p, ok := pkgs[module+"/"+leaf]
		if !ok {
			continue
		}
		for im := range p.imports {
			if contains(allowed, im) {
				continue
			}
			if !strings.HasPrefix(im, module+"/") {
				if strings.Contains(strings.SplitN(im, "/", 2)[0], ".") {
					t.Errorf("%s imports third-party %s; leaves use the standard library", leaf, im)
				}
				continue
			}
			rel := strings.TrimPrefix(im, module+"/")
			if !contains(allowed, rel) {
				t.Errorf("%s imports %s (allowed: %v)", leaf, rel, allowed)
			}
		}
	}
}

// forbidden lists importer → imported edges that must not exist.
var forbidden = []struct{ from, to string }{
	{"internal/", "internal/daemon"}, // only cmd wires the daemon
	{"internal/", "internal/cli"},
	{"internal/", "internal/fakellm"}, // test support only
	{"internal/", "internal/interop"}, // test support only
	{"internal/agent", "internal/gateway"},
	{"internal/store", "internal/agent"},
}

func TestForbiddenEdges(t *testing.T) {
	pkgs := loadPackages(t)
	var bad []string
	for ip, p := range pkgs {
		from := strings.TrimPrefix(ip, module+"/")
		for im := range p.imports {
			to := strings.TrimPrefix(im, module+"/")
			for _, f := range forbidden {
				if strings.HasPrefix(from, f.from) && (to == f.to || strings.HasPrefix(to, f.to+"/")) && from != f.to && !strings.HasPrefix(from, f.to+"/") {
					bad = append(bad, from+" → "+to)
				}
			}
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("forbidden import %s", b)
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
