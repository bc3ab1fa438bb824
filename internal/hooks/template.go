package hooks

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/internal/lazy"
)

// templateRE finds {{ expr }} placeholders.
func templateRE() *regexp.Regexp { return templateREValue.Get() }

// templateREValue is built on the first call of templateRE.
var templateREValue = lazy.Value[*regexp.Regexp]{New: buildTemplateRE}

// buildTemplateRE builds templateRE's value.
func buildTemplateRE() *regexp.Regexp { return regexp.MustCompile(`\{\{\s*([^{}]*?)\s*\}\}`) }

// scope is what a mapping's templates can read.
type scope struct {
	payload map[string]any
	headers map[string]string // lower-cased names
	query   map[string]string
	path    string
	now     time.Time
}

// render fills tpl's placeholders: {{payload.a.b}} or {{a.b}} (with array
// indexes, {{messages[0].subject}}), {{headers.x-name}}, {{query.k}},
// {{path}} and {{now}}. Missing and null values are empty; objects and
// arrays are their JSON.
func render(tpl string, s scope) string {
	return templateRE().ReplaceAllStringFunc(tpl, func(m string) string {
		expr := strings.TrimSpace(templateRE().FindStringSubmatch(m)[1])
		switch {
		case expr == "path":
			return s.path
		case expr == "now":
			return s.now.UTC().Format(time.RFC3339)
		case strings.HasPrefix(expr, "headers."):
			return s.headers[strings.ToLower(strings.TrimPrefix(expr, "headers."))]
		case strings.HasPrefix(expr, "query."):
			return s.query[strings.TrimPrefix(expr, "query.")]
		}
		expr = strings.TrimPrefix(expr, "payload.")
		return stringify(lookup(s.payload, expr))
	})
}

// lookup walks a dotted path with [n] indexes through v.
func lookup(v any, path string) any {
	for _, part := range strings.Split(path, ".") {
		name, rest, _ := strings.Cut(part, "[")
		if name != "" {
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[name]
		}
		for rest != "" {
			idx, after, ok := strings.Cut(rest, "]")
			if !ok {
				return nil
			}
			n, err := strconv.Atoi(idx)
			arr, isArr := v.([]any)
			if err != nil || !isArr || n < 0 || n >= len(arr) {
				return nil
			}
			v = arr[n]
			rest = strings.TrimPrefix(after, "[")
			if after != "" && !strings.HasPrefix(after, "[") {
				return nil
			}
		}
	}
	return v
}

func stringify(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}
