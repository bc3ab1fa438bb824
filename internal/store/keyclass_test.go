package store

import "testing"

func TestClassOf(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want KeyClass
	}{
		{"agent:main:main", 0},
		{"agent:main:subagent:abc", ClassSubagent},
		{"agent:main:cron:job1", ClassCron},
		{"agent:main:cron:job1:run:r1", ClassCron | ClassCronRun},
		{"global", ClassGlobal},
		{"unknown", ClassUnknown},
		{"agent:main:discord:group:9", 0},
	} {
		if got := ClassOf(tc.key); got != tc.want {
			t.Errorf("ClassOf(%q) = %b, want %b", tc.key, got, tc.want)
		}
	}
}
