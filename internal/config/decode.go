package config

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
)

// decoder copies the generic tree produced by the JSON5 decoder
// (map[string]any, []any, string, float64, bool, nil) into the typed Config,
// using the fields' json tags as key names. Instead of stopping at the first
// mismatch it reports every unknown key and every wrong type and keeps
// going, leaving the offending field unset.
type decoder struct {
	warn func(p keyPath, msg string)
	fail func(p keyPath, msg string)
}

// customDecoder is implemented by types whose JSON5 form is not a plain
// struct, such as ModelRef (a string or an object).
type customDecoder interface {
	decodeJSON5(d *decoder, p keyPath, v any) bool
}

// maxSafeInt is the largest integer a float64 holds exactly.
const maxSafeInt = 1 << 53

// decode stores v into rv and reports whether it did. A JSON null leaves rv
// untouched and counts as success, so null means "unset".
func (d *decoder) decode(p keyPath, v any, rv reflect.Value) bool {
	if v == nil {
		return true
	}
	if rv.CanAddr() && rv.Addr().Type().Implements(reflect.TypeFor[customDecoder]()) {
		return rv.Addr().Interface().(customDecoder).decodeJSON5(d, p, v)
	}
	switch rv.Kind() {
	case reflect.Pointer:
		nv := reflect.New(rv.Type().Elem())
		if !d.decode(p, v, nv.Elem()) {
			return false
		}
		rv.Set(nv)
		return true
	case reflect.String:
		s, ok := v.(string)
		if !ok {
			return d.mismatch(p, "a string", v)
		}
		rv.SetString(s)
		return true
	case reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			return d.mismatch(p, "true or false", v)
		}
		rv.SetBool(b)
		return true
	case reflect.Int:
		f, ok := v.(float64)
		if !ok {
			return d.mismatch(p, "an integer", v)
		}
		if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) {
			d.fail(p, fmt.Sprintf("must be an integer, got %v", f))
			return false
		}
		if f > maxSafeInt || f < -maxSafeInt {
			d.fail(p, fmt.Sprintf("integer %v is out of range", f))
			return false
		}
		rv.SetInt(int64(f))
		return true
	case reflect.Float64:
		f, ok := v.(float64)
		if !ok {
			return d.mismatch(p, "a number", v)
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			d.fail(p, fmt.Sprintf("must be a finite number, got %v", f))
			return false
		}
		rv.SetFloat(f)
		return true
	case reflect.Slice:
		a, ok := v.([]any)
		if !ok {
			return d.mismatch(p, "an array", v)
		}
		s := reflect.MakeSlice(rv.Type(), len(a), len(a))
		for i, e := range a {
			d.decode(p.index(i), e, s.Index(i))
		}
		rv.Set(s)
		return true
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return d.mismatch(p, "an object", v)
		}
		m := reflect.MakeMapWithSize(rv.Type(), len(obj))
		for _, k := range sortedKeys(obj) {
			ev := reflect.New(rv.Type().Elem()).Elem()
			if d.decode(p.key(k), obj[k], ev) {
				m.SetMapIndex(reflect.ValueOf(k), ev)
			}
		}
		rv.Set(m)
		return true
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return d.mismatch(p, "an object", v)
		}
		d.object(p, obj, rv)
		return true
	}
	panic(fmt.Sprintf("config: decoder does not support %s", rv.Type()))
}

// object decodes obj into the struct rv, warning about unknown keys.
func (d *decoder) object(p keyPath, obj map[string]any, rv reflect.Value) {
	t := rv.Type()
	for _, k := range sortedKeys(obj) {
		i, hint := fieldByTag(t, k)
		if i < 0 {
			if k == "$include" {
				d.warn(p.key(k), "$include is not supported; the included files are not read")
				continue
			}
			msg := "unknown key (ignored)"
			if hint != "" {
				msg += fmt.Sprintf("; did you mean %q?", hint)
			}
			d.warn(p.key(k), msg)
			continue
		}
		d.decode(p.key(k), obj[k], rv.Field(i))
	}
}

// fieldByTag returns the index of the exported field of t whose json name
// is k, or -1 and a field name that differs from k only in case.
func fieldByTag(t reflect.Type, k string) (int, string) {
	hint := ""
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == k {
			return i, ""
		}
		if strings.EqualFold(name, k) {
			hint = name
		}
	}
	return -1, hint
}

func (d *decoder) mismatch(p keyPath, want string, v any) bool {
	d.fail(p, fmt.Sprintf("must be %s, got %s", want, describe(v)))
	return false
}

// describe names the JSON type of a decoded value.
func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return fmt.Sprintf("%t", v)
	case float64:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// decodeJSON5 accepts "provider/model" or {primary, fallbacks}.
func (r *ModelRef) decodeJSON5(d *decoder, p keyPath, v any) bool {
	switch v := v.(type) {
	case string:
		*r = ModelRef{Primary: v}
		return true
	case map[string]any:
		var out ModelRef
		d.object(p, v, reflect.ValueOf(&out).Elem())
		*r = out
		return true
	}
	return d.mismatch(p, `a model string or {primary, fallbacks}`, v)
}
