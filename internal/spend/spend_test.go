package spend

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestExhausted(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		name string
		l    Limits
		u    Usage
		now  time.Time
		want string // substring; "" means not exhausted
	}{
		{"no limits", Limits{}, Usage{Runs: 1e6, Tokens: 1e9, Cost: 1e6}, t0, ""},
		{"runs within (the asking run counts)", Limits{Runs: 3}, Usage{Runs: 3}, t0, ""},
		{"runs over", Limits{Runs: 3}, Usage{Runs: 4}, t0, "maxRuns 3 reached (4 runs)"},
		{"tokens below", Limits{Tokens: 100}, Usage{Tokens: 99}, t0, ""},
		{"tokens at", Limits{Tokens: 100}, Usage{Tokens: 100}, t0, "maxTokens 100 reached (100 tokens used)"},
		{"cost at", Limits{Cost: 0.5}, Usage{Cost: 0.5}, t0, "maxCost $0.5 reached ($0.5 spent)"},
		{"wall time unknown start", Limits{WallTimeSeconds: 1}, Usage{}, t0, ""},
		{"wall time within", Limits{WallTimeSeconds: 60}, Usage{Started: t0}, t0.Add(59 * time.Second), ""},
		{"wall time over", Limits{WallTimeSeconds: 60}, Usage{Started: t0}, t0.Add(61 * time.Second), "maxWallTimeSeconds 60 reached (started 1m1s ago)"},
		{"children do not end a run", Limits{ConcurrentChildren: 1}, Usage{Children: 5}, t0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Exhausted(tc.l, tc.u, tc.now)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("Exhausted = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestChildRefused(t *testing.T) {
	for _, tc := range []struct {
		l    Limits
		u    Usage
		want string
	}{
		{Limits{}, Usage{Children: 100, Runs: 100}, ""},
		{Limits{ConcurrentChildren: 2}, Usage{Children: 1}, ""},
		{Limits{ConcurrentChildren: 2}, Usage{Children: 2}, "maxConcurrentChildren 2 reached (2 sub-agents running)"},
		{Limits{Runs: 2}, Usage{Runs: 1}, ""},
		{Limits{Runs: 2}, Usage{Runs: 2}, "maxRuns 2 reached"},
	} {
		if got := ChildRefused(tc.l, tc.u); (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("ChildRefused(%+v, %+v) = %q, want %q", tc.l, tc.u, got, tc.want)
		}
	}
}

func TestRemainingAndTighter(t *testing.T) {
	t0 := time.Unix(1000, 0)
	l := Limits{Runs: 10, Tokens: 1000, Cost: 2, WallTimeSeconds: 600, ConcurrentChildren: 3}
	got := Remaining(l, Usage{Runs: 4, Tokens: 1500, Cost: 0.5, Started: t0}, t0.Add(100*time.Second))
	want := Limits{Runs: 6, Tokens: 1, Cost: 1.5, WallTimeSeconds: 500, ConcurrentChildren: 3}
	if got != want {
		t.Errorf("Remaining = %+v, want %+v", got, want)
	}
	if got := Remaining(Limits{}, Usage{Runs: 5}, t0); !got.IsZero() {
		t.Errorf("Remaining of no limits = %+v", got)
	}
	a := Limits{Runs: 5, Tokens: 0, Cost: 1, WallTimeSeconds: 0, ConcurrentChildren: 2}
	b := Limits{Runs: 0, Tokens: 700, Cost: 0.25, WallTimeSeconds: 30, ConcurrentChildren: 4}
	if got, want := Tighter(a, b), (Limits{Runs: 5, Tokens: 700, Cost: 0.25, WallTimeSeconds: 30, ConcurrentChildren: 2}); got != want {
		t.Errorf("Tighter = %+v, want %+v", got, want)
	}
	if got := Tighter(Limits{}, b); got != b {
		t.Errorf("Tighter(zero, b) = %+v", got)
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Limits
		wantErr string
	}{
		{``, Limits{}, ""},
		{`null`, Limits{}, ""},
		{`{"maxRuns":3,"maxTokens":1000,"maxCost":0.5,"maxWallTimeSeconds":60,"maxConcurrentChildren":2}`,
			Limits{Runs: 3, Tokens: 1000, Cost: 0.5, WallTimeSeconds: 60, ConcurrentChildren: 2}, ""},
		{`{"maxTokens":-1}`, Limits{}, "maxTokens must be a non-negative number"},
		{`{"maxCoins":1}`, Limits{}, `unknown field "maxCoins"`},
		{`{"maxRuns":"3"}`, Limits{}, "cannot unmarshal"},
		{`{} {}`, Limits{}, "trailing data"},
	} {
		got, err := Parse(json.RawMessage(tc.in))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Parse(%s) err = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Parse(%s) = %+v, %v", tc.in, got, err)
		}
	}
	if got := FromExtra(json.RawMessage(`{"label":"x","budget":{"maxRuns":2}}`)); got != (Limits{Runs: 2}) {
		t.Errorf("FromExtra = %+v", got)
	}
	if got := FromExtra(json.RawMessage(`{"budget":{"maxRuns":-2}}`)); !got.IsZero() {
		t.Errorf("FromExtra of a bad budget = %+v", got)
	}
}

// FuzzParse: any input either parses to valid limits or fails; it never
// panics, and what parses survives a round trip.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"maxRuns":3}`, `{"maxCost":1e308}`, `{"maxTokens":-1}`, `[]`, `{"maxCost":NaN}`, `nul`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		l, err := Parse(json.RawMessage(in))
		if err != nil {
			return
		}
		if verr := l.Validate(); verr != nil {
			t.Fatalf("Parse accepted invalid limits %+v: %v", l, verr)
		}
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		if again, err := Parse(b); err != nil || again != l {
			t.Fatalf("round trip %s: %+v, %v", b, again, err)
		}
	})
}
