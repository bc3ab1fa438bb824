package timerslack

import (
	"testing"
	"time"
)

func TestWanted(t *testing.T) {
	for _, tc := range []struct {
		env     string
		want    time.Duration
		wantErr bool
	}{
		{"", Default, false},
		{"0", 0, false},
		{"0s", 0, false},
		{"250us", 250 * time.Microsecond, false},
		{"2ms", 2 * time.Millisecond, false},
		{"1s", time.Second, false},
		{"1.5s", 0, true},
		{"-1ms", 0, true},
		{"1000", 0, true},
		{"fast", 0, true},
	} {
		got, err := Wanted(func(k string) string {
			if k != Env {
				t.Fatalf("Wanted read %s", k)
			}
			return tc.env
		})
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("%s=%q: got %v, %v; want %v (error %v)", Env, tc.env, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestReexecZeroKeepsTheSlack(t *testing.T) {
	before, err := Current()
	if err != nil {
		t.Fatal(err)
	}
	if err := Reexec(0); err != nil {
		t.Fatal(err)
	}
	if after, _ := Current(); after != before {
		t.Fatalf("slack %v after Reexec(0), was %v", after, before)
	}
}
