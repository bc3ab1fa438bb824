package admission

import "testing"

// oldRules is the map Rules was until it became RuleFor's switch (issue
// 37: no init-time work); RuleFor must give every origin its old rule.
var oldRules = map[Origin]Rule{
	OriginOperator: {Commands: true, SendPolicy: true},
	OriginChannel:  {Commands: true, SendPolicy: true},
	OriginA2A:      {SendPolicy: true},
	OriginWebhook:  {SendPolicy: true},
	OriginCron:     {SendPolicy: true},
	OriginAgent:    {SendPolicy: true, Queue: "inter", Guards: true},
	OriginSpawn:    {},
	OriginAnnounce: {Queue: "keep"},
	OriginStep:     {Queue: "none"},
}

func TestRuleForMatchesTheOldTable(t *testing.T) {
	for o, want := range oldRules {
		got, ok := RuleFor(o)
		if !ok || got != want {
			t.Errorf("RuleFor(%q) = %+v, %v; want %+v, true", o, got, ok, want)
		}
	}
	for _, o := range []Origin{"", "Operator", "operator ", "unknown"} {
		if got, ok := RuleFor(o); ok || got != (Rule{}) {
			t.Errorf("RuleFor(%q) = %+v, %v; want no rule", o, got, ok)
		}
	}
}
