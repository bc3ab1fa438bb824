package skills

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, in, dir string
		want          func(*Skill) bool
		err           string
	}{
		{name: "minimal", dir: "/s/lab", in: "---\nname: image-lab\ndescription: Make images\n---\nUse the tool.\n",
			want: func(s *Skill) bool {
				return s.Name == "image-lab" && s.Description == "Make images" && s.Body == "Use the tool.\n" && s.UserInvocable && s.FilePath == "/s/lab/SKILL.md"
			}},
		{name: "name from the folder", dir: "/s/weather", in: "---\ndescription: Forecasts\n---\n",
			want: func(s *Skill) bool { return s.Name == "weather" }},
		{name: "the reference's metadata block (JSON5 in YAML)", dir: "/s/x", in: "---\nname: image-lab\ndescription: d\nmetadata:\n  {\n    \"openclaw\":\n      {\n        \"requires\": { \"bins\": [\"uv\"], \"env\": [\"GEMINI_API_KEY\"], \"config\": [\"browser.enabled\"] },\n        \"primaryEnv\": \"GEMINI_API_KEY\",\n      },\n  }\n---\n",
			want: func(s *Skill) bool {
				m := s.Metadata
				return m != nil && m.PrimaryEnv == "GEMINI_API_KEY" && len(m.Requires.Bins) == 1 && m.Requires.Bins[0] == "uv" && m.Requires.Config[0] == "browser.enabled"
			}},
		{name: "metadata as a one-line JSON string", dir: "/s/x", in: "---\nname: a\ndescription: d\nmetadata: '{\"openclaw\": {\"os\": [\"linux\"], \"always\": true}}'\n---\n",
			want: func(s *Skill) bool { return s.Metadata != nil && s.Metadata.Always && s.Metadata.OS[0] == "linux" }},
		{name: "legacy clawdbot block", dir: "/s/x", in: "---\nname: a\ndescription: d\nmetadata:\n  clawdbot:\n    emoji: \"🦀\"\n---\n",
			want: func(s *Skill) bool { return s.Metadata != nil && s.Metadata.Emoji == "🦀" }},
		{name: "flags", dir: "/s/x", in: "---\nname: a\ndescription: d\nuser-invocable: false\ndisable-model-invocation: true\n---\n",
			want: func(s *Skill) bool { return !s.UserInvocable && s.DisableModelInvocation }},
		{name: "CRLF and BOM", dir: "/s/x", in: "\ufeff---\r\nname: a\r\ndescription: d\r\n---\r\nbody\r\n",
			want: func(s *Skill) bool { return s.Name == "a" && s.Body == "body\n" }},
		{name: "single-line fallback when YAML refuses", dir: "/s/x", in: "---\nname: a\ndescription: uses: colons: everywhere\n---\n",
			want: func(s *Skill) bool { return s.Description == "uses: colons: everywhere" }},
		{name: "no frontmatter", dir: "/s/x", in: "# Just markdown\n", err: "no frontmatter"},
		{name: "unclosed frontmatter", dir: "/s/x", in: "---\nname: a\ndescription: d\n", err: "no frontmatter"},
		{name: "no description", dir: "/s/x", in: "---\nname: a\n---\n", err: "no description"},
		{name: "bad YAML and bad JSON5", dir: "/s/x", in: "---\nname: a\ndescription: d\nmetadata:\n  {{{ nope\n---\n", err: "neither YAML nor JSON5"},
		{name: "metadata not an object", dir: "/s/x", in: "---\nname: a\ndescription: d\nmetadata: [1, 2]\n---\n", err: "want an object"},
		{name: "path in the name", dir: "/s/x", in: "---\nname: ../../etc\ndescription: d\n---\n", err: "not a plain name"},
		{name: "dot name", dir: "/s/x", in: "---\nname: ..\ndescription: d\n---\n", err: "not a plain name"},
		{name: "control character in the name", dir: "/s/x", in: "---\nname: \"a\\u0000b\"\ndescription: d\n---\n", err: "control characters"},
		{name: "long name", dir: "/s/x", in: "---\nname: " + strings.Repeat("n", 65) + "\ndescription: d\n---\n", err: "over 64"},
		{name: "long description", dir: "/s/x", in: "---\nname: a\ndescription: " + strings.Repeat("d", 1025) + "\n---\n", err: "over the limit of 1024"},
		{name: "huge file", dir: "/s/x", in: "---\nname: a\ndescription: d\n---\n" + strings.Repeat("x", MaxFileBytes), err: "over the limit"},
		{name: "not UTF-8", dir: "/s/x", in: "---\nname: a\ndescription: \xff\n---\n", err: "not UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse([]byte(tt.in), tt.dir)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.want(s) {
				t.Fatalf("got %+v (metadata %+v)", s, s.Metadata)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("---\nname: a\ndescription: d\nmetadata:\n  {\"openclaw\": {\"requires\": {\"bins\": [\"x\"]}}}\n---\nbody"))
	f.Add([]byte("---\nname: a\ndescription: d: e\nmetadata:\n  { openclaw: { os: [\"linux\",], }, }\n---\n"))
	f.Add([]byte("---\n---\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Parse(b, "/skills/x")
		if err != nil {
			return
		}
		if s.Name == "" || s.Description == "" || checkName(s.Name) != nil {
			t.Fatalf("accepted a skill without a usable name or description: %+v", s)
		}
	})
}
