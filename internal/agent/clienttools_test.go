package agent

import (
	"slices"
	"testing"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

func TestWithClientTools(t *testing.T) {
	agentDefs := []provider.ToolDef{{Name: "read"}, {Name: "sessions_list"}}
	tests := []struct {
		name      string
		client    []provider.ToolDef
		wantNames []string
		wantOwned []string
		wantErr   string
	}{
		{"none", nil, []string{"read", "sessions_list"}, nil, ""},
		{"added", []provider.ToolDef{{Name: "get_weather"}}, []string{"read", "sessions_list", "get_weather"}, []string{"get_weather"}, ""},
		{"empty name skipped", []provider.ToolDef{{Name: "x"}, {Name: " "}}, []string{"read", "sessions_list", "x"}, []string{"x"}, ""},
		{"agent tool conflict", []provider.ToolDef{{Name: "Read"}, {Name: "x"}}, nil, nil, "client tool name conflict: Read"},
		{"client duplicates", []provider.ToolDef{{Name: "x"}, {Name: "y"}, {Name: " X "}}, nil, nil, "client tool name conflict: x,  X "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defs, owned, err := withClientTools(slices.Clone(agentDefs), tt.client)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names, ownedNames []string
			for _, d := range defs {
				names = append(names, d.Name)
			}
			for n := range owned {
				ownedNames = append(ownedNames, n)
			}
			slices.Sort(ownedNames)
			if !slices.Equal(names, tt.wantNames) || !slices.Equal(ownedNames, tt.wantOwned) {
				t.Errorf("defs %v owned %v, want %v %v", names, ownedNames, tt.wantNames, tt.wantOwned)
			}
		})
	}
}

func TestSplitClientCalls(t *testing.T) {
	calls := []transcript.Block{
		transcript.ToolCallBlock("1", "read", nil),
		transcript.ToolCallBlock("2", "get_weather", nil),
		transcript.ToolCallBlock("3", "sessions_list", nil),
	}
	ids := func(bs []transcript.Block) (out []string) {
		for _, b := range bs {
			out = append(out, b.ID)
		}
		return out
	}
	a, p := splitClientCalls(calls, map[string]bool{"get_weather": true})
	if !slices.Equal(ids(a), []string{"1", "3"}) || !slices.Equal(ids(p), []string{"2"}) {
		t.Errorf("agent %v pending %v", ids(a), ids(p))
	}
	a, p = splitClientCalls(calls, nil)
	if len(a) != 3 || p != nil {
		t.Errorf("without client tools: agent %v pending %v", ids(a), ids(p))
	}
}
