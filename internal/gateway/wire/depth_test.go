package wire

import (
	"strings"
	"testing"
)

func TestTooDeepFrameKeepsTypeAndID(t *testing.T) {
	deep := strings.Repeat("[", 10_000) + strings.Repeat("]", 10_000)
	for _, tc := range []struct {
		frame, typ, id string
	}{
		{`{"type":"req","id":"r1","method":"health","params":{"x":` + deep + `}}`, "req", "r1"},
		{`{"params":{"x":` + deep + `},"id":"r\"2","type":"req","method":"health"}`, "req", `r"2`},
		{`{"type":"req","params":` + deep + `}`, "req", ""},
		{`{"params":{"type":"event","id":"inner"},"x":` + deep + `}`, "", ""},
	} {
		_, err := Decode([]byte(tc.frame))
		de, ok := err.(*DecodeError)
		if !ok || de.Type != tc.typ || de.ID != tc.id || !strings.Contains(de.Reason, "nested more than 256 levels") {
			t.Errorf("Decode(%.40q…) = %#v", tc.frame, err)
		}
	}
	// At the limit it still decodes.
	ok := `{"type":"req","id":"r","method":"health","params":{"a":` + strings.Repeat("[", MaxNesting-2) + strings.Repeat("]", MaxNesting-2) + `}}`
	if _, err := Decode([]byte(ok)); err != nil && strings.Contains(err.Error(), "nested") {
		t.Errorf("a frame at the limit was refused as too deep: %v", err)
	}
	// Brackets inside strings do not count.
	str := `{"type":"req","id":"s","method":"chat.send","params":{"message":"` + strings.Repeat("[{", 5000) + `"}}`
	if nestingExceeds([]byte(str), MaxNesting) {
		t.Error("brackets in a string counted as nesting")
	}
}

func FuzzTopLevelStrings(f *testing.F) {
	f.Add([]byte(`{"type":"req","id":"1"}`))
	f.Add([]byte(`{"a":[{"type":"x"}],"type":"req","id":"\u0041"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		typ, id := topLevelStrings(data)
		_ = nestingExceeds(data, MaxNesting)
		if len(typ) > len(data) || len(id) > len(data) {
			t.Fatalf("values longer than the input")
		}
	})
}
