package docstest

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The section sign is written as an escape so this file holds no citation
// of its own.
const sect = "\u00a7"

var (
	// specPage is a citation's page: docs/spec/<name>.md.
	specPage = regexp.MustCompile(`docs/spec/([a-z0-9-]+)\.md`)
	// specCite is one cited section, with an optional step.
	specCite = regexp.MustCompile(sect + `(\d+(?:\.\d+)*[a-z]?)(?:\s+step\s+(\d+))?`)
	// specHeading is a spec page's section heading.
	specHeading = regexp.MustCompile(`^#{2,6}\s+` + sect + `(\d+(?:\.\d+)*[a-z]?)\s`)
	// listGap is what may stand between a page and its first citation, or
	// between two citations of a list.
	listGap = regexp.MustCompile(`^\s*(?:,|and|or|,\s*and)?\s*$`)
)

// specSections reads a docs/spec page: each section number with the text of
// its summary (up to the next heading).
func specSections(text string) map[string]string {
	out := map[string]string{}
	cur := ""
	for _, line := range strings.Split(text, "\n") {
		if m := specHeading.FindStringSubmatch(line); m != nil {
			cur = m[1]
			out[cur] = ""
			continue
		}
		if strings.HasPrefix(line, "#") {
			cur = ""
			continue
		}
		if cur != "" {
			out[cur] += line + "\n"
		}
	}
	return out
}

// citationErrors checks the section citations on one line of Go source.
// Every section sign must follow, on the same line, a docs/spec/<page>.md
// naming a page of pages, either directly after it or in a list of
// citations after it (separated by commas, "and" or "or"); the page must
// have a heading for the section, and a cited step must be mentioned in
// that section's summary.
func citationErrors(line string, pages map[string]map[string]string) []string {
	var errs []string
	pageAt := specPage.FindAllStringSubmatchIndex(line, -1)
	prevEnd, page := -1, "" // end of the last page or citation, and its page
	for _, c := range specCite.FindAllStringSubmatchIndex(line, -1) {
		cited := line[c[0]:c[1]]
		for _, p := range pageAt {
			if p[1] <= c[0] && p[1] > prevEnd {
				prevEnd, page = p[1], line[p[2]:p[3]]
			}
		}
		if page == "" || !listGap.MatchString(line[prevEnd:c[0]]) {
			errs = append(errs, "citation "+cited+" does not follow a docs/spec/<page>.md (or a list of citations after one)")
			prevEnd, page = c[1], ""
			continue
		}
		prevEnd = c[1]
		sections, ok := pages[page]
		if !ok {
			errs = append(errs, "citation "+cited+": docs/spec/"+page+".md does not exist")
			continue
		}
		sec := line[c[2]:c[3]]
		body, ok := sections[sec]
		if !ok {
			errs = append(errs, "citation "+cited+": docs/spec/"+page+".md has no heading for "+sect+sec)
			continue
		}
		if c[4] >= 0 {
			step := regexp.MustCompile(`(?i)\bstep ` + line[c[4]:c[5]] + `\b`)
			if !step.MatchString(body) {
				errs = append(errs, "citation "+cited+": the summary of "+sect+sec+" in docs/spec/"+page+".md does not mention that step")
			}
		}
	}
	// A section sign the citation pattern did not take (no number after it).
	if n := strings.Count(line, sect); n != len(specCite.FindAllStringIndex(line, -1)) {
		errs = append(errs, "a "+sect+" not followed by a section number")
	}
	return errs
}

// TestSpecCitationsResolve scans every .go file of the repository for
// section citations and checks each against the docs/spec pages.
func TestSpecCitationsResolve(t *testing.T) {
	root := repoRoot(t)
	specFiles, err := filepath.Glob(filepath.Join(root, "docs", "spec", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages := map[string]map[string]string{}
	for _, f := range specFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pages[strings.TrimSuffix(filepath.Base(f), ".md")] = specSections(string(b))
	}
	cites := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for i, line := range strings.Split(string(b), "\n") {
			if !strings.Contains(line, sect) {
				continue
			}
			cites += strings.Count(line, sect)
			for _, e := range citationErrors(line, pages) {
				t.Errorf("%s:%d: %s", rel, i+1, e)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if cites < 50 {
		t.Errorf("only %d citations found; is the scan broken?", cites)
	}
}

// A citation without a page, to a missing page, section or step, or a bare
// section sign is reported; good citations are not.
func TestCitationErrors(t *testing.T) {
	pages := map[string]map[string]string{
		"ref": specSections("# Ref\n\n## " + sect + "6 Send\n\ntext\n\n### " + sect + "6.1 Targeting\n\n- Step 3: labels.\n\n## Not a section\n\nStep 4.\n"),
	}
	for line, wantErrs := range map[string]int{
		"// docs/spec/ref.md " + sect + "6.1 step 3":                  0,
		"// (docs/spec/ref.md " + sect + "6 and " + sect + "6.1).":    0,
		"// docs/spec/ref.md " + sect + "6.1.":                        0,
		"// reference-behaviour " + sect + "6.1":                      1,
		"// docs/spec/other.md " + sect + "6":                         1,
		"// docs/spec/ref.md " + sect + "6.2":                         1,
		"// docs/spec/ref.md " + sect + "6.1 step 4":                  1,
		"// docs/spec/ref.md " + sect + "6 step 3":                    1,
		"// " + sect + "6 docs/spec/ref.md":                           1,
		"// docs/spec/ref.md " + sect + "6, and a bare " + sect + ".": 1,
	} {
		if got := citationErrors(line, pages); len(got) != wantErrs {
			t.Errorf("citationErrors(%q) = %q, want %d errors", line, got, wantErrs)
		}
	}
}
