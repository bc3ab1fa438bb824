package skills

import (
	"github.com/switchboardhq/switchboard/internal/lazy"
	"strings"
	"unicode/utf8"
)

// catalogIntro opens the catalog (the reference's wording, which models
// trained on its prompts know).
const catalogIntro = "The following skills provide specialized instructions for specific tasks."

// catalogPathNote tells the model how to read a skill's relative paths.
const catalogPathNote = "When a skill file references a relative path, resolve it against the skill directory (parent of SKILL.md / dirname of the path) and use that absolute path in tool commands."

// Section is the system prompt's "## Skills" section listing list (already
// filtered to what the model may see) within maxChars (0: MaxPromptChars);
// readTool is the tool that reads a file. No skills, no section.
func Section(list []*Skill, readTool string, maxChars int) string {
	cat := Catalog(list, maxChars)
	if cat == "" {
		return ""
	}
	return strings.Join([]string{
		"## Skills",
		"Scan <available_skills>. Clear match: read exact <location> with `" + readTool + "`; obey.",
		"Several: most specific. None: read none.",
		"Up-front max one. Never invent paths.",
		"External writes: batch safely; no tight loops; honor 429/Retry-After.",
		cat,
	}, "\n")
}

// Catalog renders list as the <available_skills> block. When the full
// block is over maxChars, descriptions are shortened, then left out, and
// last skills are dropped, with a note saying so.
func Catalog(list []*Skill, maxChars int) string {
	if len(list) == 0 {
		return ""
	}
	if maxChars <= 0 {
		maxChars = MaxPromptChars
	}
	if len(list) > MaxSkillsInPrompt {
		list = list[:MaxSkillsInPrompt]
	}
	if full := render(list, "Read a skill's file at its listed location when the task matches its description.", -1, ""); len(full) <= maxChars {
		return full
	}
	for _, n := range []int{220, 160, 100, 64} {
		if c := render(list, "Read a skill's file at its listed location when the task matches its name or description.", n, checkNote); len(c) <= maxChars {
			return c
		}
	}
	// Names and locations only, as many as fit.
	for k := len(list); k > 0; k-- {
		if c := render(list[:k], "Read a skill's file at its listed location when the task matches its name.", 0, checkNote); len(c) <= maxChars || k == 1 {
			return c
		}
	}
	return ""
}

// checkNote is added when the catalog had to be shortened.
const checkNote = "Some skills are shortened or left out of this list to fit the prompt budget; `switchboard skills check` (or `openclaw skills check`) lists them all."

// render writes the block; descMax < 0 keeps descriptions whole, 0 leaves
// them out.
func render(list []*Skill, loading string, descMax int, note string) string {
	var b strings.Builder
	b.WriteString(catalogIntro + "\n" + loading + "\n" + catalogPathNote + "\n")
	if note != "" {
		b.WriteString(note + "\n")
	}
	b.WriteString("\n<available_skills>\n")
	for _, s := range list {
		b.WriteString("  <skill>\n    <name>" + escapeXML(s.Name) + "</name>\n")
		if d := shorten(s.Description, descMax); d != "" {
			b.WriteString("    <description>" + escapeXML(d) + "</description>\n")
		}
		b.WriteString("    <location>" + escapeXML(s.FilePath) + "</location>\n  </skill>\n")
	}
	b.WriteString("</available_skills>")
	return b.String()
}

// shorten collapses white space and cuts d to max runes with "..." (max
// < 0: whole; 0: nothing).
func shorten(d string, max int) string {
	d = strings.Join(strings.Fields(d), " ")
	if max < 0 || utf8.RuneCountInString(d) <= max {
		if max == 0 {
			return ""
		}
		return d
	}
	r := []rune(d)
	if max <= 3 {
		return string(r[:max])
	}
	return strings.TrimRight(string(r[:max-3]), " ") + "..."
}

var xmlEscaper = lazy.Value[*strings.Replacer]{New: newXMLEscaper}

func newXMLEscaper() *strings.Replacer {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;")
}

func escapeXML(s string) string { return xmlEscaper.Get().Replace(s) }
