package config

import (
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The alias maps as they were before they became static tables (issue 37:
// no init-time work).
var (
	oldQueueModeAliases = map[string]string{
		"interrupt": "interrupt", "interrupts": "interrupt", "abort": "interrupt",
		"steer": "steer", "steering": "steer",
		"followup": "followup", "follow-ups": "followup", "followups": "followup",
		"collect": "collect", "coalesce": "collect",
	}
	oldQueueDropAliases = map[string]string{
		"old": "old", "oldest": "old", "new": "new", "newest": "new", "summarize": "summarize", "summary": "summarize",
	}
)

// TestQueueAliasTables: the exported copies and the checker accept every
// old spelling (in any case, with spaces) and nothing else.
func TestQueueAliasTables(t *testing.T) {
	if diff := cmp.Diff(oldQueueModeAliases, QueueModeAliases()); diff != "" {
		t.Errorf("QueueModeAliases (-old +new):\n%s", diff)
	}
	if diff := cmp.Diff(oldQueueDropAliases, QueueDropAliases()); diff != "" {
		t.Errorf("QueueDropAliases (-old +new):\n%s", diff)
	}
	// A copy: changing it changes nothing.
	m := QueueModeAliases()
	m["steer"] = "collect"
	if QueueModeAliases()["steer"] != "steer" {
		t.Error("QueueModeAliases returns the table itself")
	}
	queueProblems := func(mode, drop string) []Problem {
		var c Config
		c.Messages.Queue.Mode, c.Messages.Queue.Drop = mode, drop
		problems, _ := c.check()
		var out []Problem
		for _, p := range problems {
			if p.Path == "messages.queue.mode" || p.Path == "messages.queue.drop" {
				out = append(out, p)
			}
		}
		return out
	}
	probes := []string{"", "steers", "follow-up", "summarise", "olde", "x", "abort "}
	for _, k := range slicesOf(oldQueueModeAliases, oldQueueDropAliases) {
		probes = append(probes, k, " "+k+" ", "X"+k, k+"x")
		if k != "" {
			probes = append(probes, string(k[0]-'a'+'A')+k[1:])
		}
	}
	for _, p := range probes {
		_, modeOK := oldQueueModeAliases[norm(p)]
		_, dropOK := oldQueueDropAliases[norm(p)]
		if got := queueProblems(p, ""); (len(got) == 0) != (modeOK || p == "") {
			t.Errorf("mode %q: problems %v, want accepted %v", p, got, modeOK || p == "")
		}
		if got := queueProblems("", p); (len(got) == 0) != (dropOK || p == "") {
			t.Errorf("drop %q: problems %v, want accepted %v", p, got, dropOK || p == "")
		}
	}
}

func slicesOf(ms ...map[string]string) []string {
	var out []string
	for _, m := range ms {
		out = append(out, slices.Collect(maps.Keys(m))...)
	}
	return out
}
