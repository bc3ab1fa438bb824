package skills

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/titanous/json5"
	yaml "go.yaml.in/yaml/v3"
)

// Parse reads a SKILL.md's content: dir is its folder (whose base name is
// the skill's name when the frontmatter gives none). The frontmatter is
// YAML; when YAML refuses it, single "key: value" lines are read, and an
// indented block under a key is taken as JSON5 (the reference's
// fallback, so the metadata block of its docs parses either way).
func Parse(content []byte, dir string) (*Skill, error) {
	if len(content) > MaxFileBytes {
		return nil, fmt.Errorf("SKILL.md is %d bytes, over the limit of %d", len(content), MaxFileBytes)
	}
	if !utf8.Valid(content) {
		return nil, errors.New("SKILL.md is not UTF-8 text")
	}
	front, body, ok := splitFrontmatter(content)
	if !ok {
		return nil, errors.New("SKILL.md has no frontmatter (a block between --- lines with name and description)")
	}
	fields, err := frontmatterFields(front)
	if err != nil {
		return nil, err
	}
	s := &Skill{Body: body, UserInvocable: true, BaseDir: dir, FilePath: filepath.Join(dir, "SKILL.md")}
	s.Name = strings.TrimSpace(stringField(fields["name"]))
	if s.Name == "" {
		s.Name = filepath.Base(dir)
	}
	if err := checkName(s.Name); err != nil {
		return nil, err
	}
	s.Description = strings.TrimSpace(stringField(fields["description"]))
	if s.Description == "" {
		return nil, errors.New("SKILL.md's frontmatter has no description")
	}
	if n := utf8.RuneCountInString(s.Description); n > maxDescriptionLen {
		return nil, fmt.Errorf("description is %d characters, over the limit of %d", n, maxDescriptionLen)
	}
	if v, ok := fields["user-invocable"]; ok {
		s.UserInvocable = boolField(v, true)
	}
	if v, ok := fields["disable-model-invocation"]; ok {
		s.DisableModelInvocation = boolField(v, false)
	}
	s.Homepage = strings.TrimSpace(stringField(fields["homepage"]))
	if v, ok := fields["metadata"]; ok && v != nil {
		md, err := parseMetadata(v)
		if err != nil {
			return nil, fmt.Errorf("metadata: %w", err)
		}
		s.Metadata = md
	}
	return s, nil
}

// checkName refuses names that could not be a folder's, a config key or a
// slash command: path separators, dot names, control characters, and
// over-long names.
func checkName(name string) error {
	switch {
	case utf8.RuneCountInString(name) > maxNameLen:
		return fmt.Errorf("skill name is over %d characters", maxNameLen)
	case name == "." || name == ".." || strings.ContainsAny(name, `/\`):
		return fmt.Errorf("skill name %q is not a plain name (no path separators or dot names)", name)
	case strings.IndexFunc(name, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }) >= 0:
		return fmt.Errorf("skill name %q has spaces or control characters", name)
	}
	return nil
}

// splitFrontmatter returns the text between the opening and closing "---"
// lines, and the body after them.
func splitFrontmatter(content []byte) (front, body string, ok bool) {
	text := strings.ReplaceAll(string(bytes.TrimPrefix(content, []byte("\ufeff"))), "\r\n", "\n")
	if !strings.HasPrefix(text, "---\n") {
		return "", "", false
	}
	rest := text[len("---\n"):]
	for off := 0; off <= len(rest); {
		end := strings.IndexByte(rest[off:], '\n')
		line := rest[off:]
		if end >= 0 {
			line = rest[off : off+end]
		}
		if strings.TrimRight(line, " \t") == "---" {
			after := ""
			if end >= 0 {
				after = rest[off+end+1:]
			}
			return rest[:off], strings.TrimLeft(after, "\n"), true
		}
		if end < 0 {
			break
		}
		off += end + 1
	}
	return "", "", false
}

// frontmatterFields parses the frontmatter as YAML, else by lines.
func frontmatterFields(front string) (map[string]any, error) {
	var m map[string]any
	if err := yaml.Unmarshal([]byte(front), &m); err == nil {
		if m == nil {
			m = map[string]any{}
		}
		return m, nil
	}
	return lineFields(front)
}

// lineFields is the fallback parser: "key: value" lines at the left
// margin; a key with no value takes the indented lines below it as one
// JSON5 text.
func lineFields(front string) (map[string]any, error) {
	m := map[string]any{}
	lines := strings.Split(front, "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			return nil, fmt.Errorf("frontmatter line %d: indented line outside a block", i+1)
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("frontmatter line %d: want \"key: value\"", i+1)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if v != "" {
			m[k] = unquote(v)
			continue
		}
		var block []string
		for i+1 < len(lines) && (lines[i+1] == "" || lines[i+1][0] == ' ' || lines[i+1][0] == '\t') {
			i++
			block = append(block, lines[i])
		}
		var val any
		if err := json5.Unmarshal([]byte(strings.Join(block, "\n")), &val); err != nil {
			return nil, fmt.Errorf("frontmatter key %q: the block is neither YAML nor JSON5: %v", k, err)
		}
		m[k] = val
	}
	return m, nil
}

// unquote strips one pair of matching quotes.
func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		return v[1 : len(v)-1]
	}
	return v
}

// stringField is v as text ("" for a map or list).
func stringField(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case bool, int, float64:
		return fmt.Sprint(t)
	}
	return ""
}

// boolField reads a YAML or text boolean, else def.
func boolField(v any, def bool) bool {
	switch t := v.(type) {
	case bool:
		return t
	case string:
		switch strings.ToLower(strings.TrimSpace(t)) {
		case "true", "yes":
			return true
		case "false", "no":
			return false
		}
	}
	return def
}

// parseMetadata reads metadata.openclaw (or metadata.clawdbot when
// openclaw is absent) from a parsed YAML value or a JSON5 string.
func parseMetadata(v any) (*Metadata, error) {
	if s, ok := v.(string); ok {
		var val any
		if err := json5.Unmarshal([]byte(s), &val); err != nil {
			return nil, fmt.Errorf("not a JSON5 object: %v", err)
		}
		v = val
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("want an object")
	}
	inner, ok := obj["openclaw"]
	if !ok {
		inner, ok = obj["clawdbot"]
	}
	if !ok || inner == nil {
		return nil, nil
	}
	raw, err := json.Marshal(inner)
	if err != nil {
		return nil, fmt.Errorf("openclaw block: %v", err)
	}
	var md Metadata
	if err := json.Unmarshal(raw, &md); err != nil {
		return nil, fmt.Errorf("openclaw block: %v", err)
	}
	return &md, nil
}
