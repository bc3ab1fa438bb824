package config

import "maps"

// Helpers for the accessors that lay an agent's settings over the
// defaults' field by field: a set field replaces, an unset one keeps.

// overPtr sets *dst to v when v is set (not nil).
func overPtr[T any](dst **T, v *T) {
	if v != nil {
		*dst = v
	}
}

// overList sets *dst to v when v is set (not nil; an empty list is set).
func overList[T any](dst *[]T, v []T) {
	if v != nil {
		*dst = v
	}
}

// overStr sets *dst to v when v is not empty.
func overStr(dst *string, v string) {
	if v != "" {
		*dst = v
	}
}

// overMap adds v's entries to *dst, making it when nil. *dst must not
// be shared with the defaults (clone it first).
func overMap[K comparable, V any](dst *map[K]V, v map[K]V) {
	if len(v) == 0 {
		return
	}
	if *dst == nil {
		*dst = make(map[K]V, len(v))
	}
	maps.Copy(*dst, v)
}
