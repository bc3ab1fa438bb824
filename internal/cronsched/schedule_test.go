package cronsched

import (
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		s    Schedule
		err  string
	}{
		{"at ok", Schedule{Kind: "at", At: "2026-01-02T03:04:05Z"}, ""},
		{"at missing", Schedule{Kind: "at"}, "schedule.at is required"},
		{"at bad", Schedule{Kind: "at", At: "tomorrow"}, "not an RFC 3339"},
		{"every ok", Schedule{Kind: "every", EveryMs: 30000}, ""},
		{"every too short", Schedule{Kind: "every", EveryMs: 10}, "at least 1000"},
		{"every negative anchor", Schedule{Kind: "every", EveryMs: 5000, AnchorMs: -1}, "anchorMs"},
		{"cron ok", Schedule{Kind: "cron", Expr: "0 7 * * *", Tz: "Europe/Berlin"}, ""},
		{"cron descriptor", Schedule{Kind: "cron", Expr: "@hourly"}, ""},
		{"cron bad expr", Schedule{Kind: "cron", Expr: "61 * * * *"}, "schedule.expr"},
		{"cron missing", Schedule{Kind: "cron"}, "schedule.expr is required"},
		{"cron bad tz", Schedule{Kind: "cron", Expr: "* * * * *", Tz: "Mars/Olympus"}, "schedule.tz"},
		{"cron inline tz", Schedule{Kind: "cron", Expr: "CRON_TZ=UTC * * * * *"}, "use schedule.tz"},
		{"no kind", Schedule{}, "schedule.kind is required"},
		{"bad kind", Schedule{Kind: "sometimes"}, "not one of"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.s.Validate()
			if tc.err == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("Validate = %v, want error containing %q", err, tc.err)
			}
		})
	}
}

func TestNext(t *testing.T) {
	base := time.Date(2026, 3, 28, 12, 0, 30, 0, time.UTC)
	tests := []struct {
		name string
		s    Schedule
		at   time.Time
		want time.Time
		ok   bool
	}{
		{"at future", Schedule{Kind: "at", At: "2026-03-28T13:00:00Z"}, base, time.Date(2026, 3, 28, 13, 0, 0, 0, time.UTC), true},
		{"at past", Schedule{Kind: "at", At: "2026-03-28T11:00:00Z"}, base, time.Time{}, false},
		{"every from epoch", Schedule{Kind: "every", EveryMs: 60000}, base, time.Date(2026, 3, 28, 12, 1, 0, 0, time.UTC), true},
		{"every before anchor", Schedule{Kind: "every", EveryMs: 60000, AnchorMs: base.Add(time.Hour).UnixMilli()}, base, base.Add(time.Hour), true},
		{"every on tick", Schedule{Kind: "every", EveryMs: 30000}, base, base.Add(30 * time.Second), true},
		{"cron utc", Schedule{Kind: "cron", Expr: "*/5 * * * *"}, base, time.Date(2026, 3, 28, 12, 5, 0, 0, time.UTC), true},
		// 07:00 in Berlin on the day DST starts (2026-03-29, UTC+2) is 05:00 UTC.
		{"cron tz dst", Schedule{Kind: "cron", Expr: "0 7 * * *", Tz: "Europe/Berlin"}, base, time.Date(2026, 3, 29, 5, 0, 0, 0, time.UTC), true},
		{"invalid", Schedule{Kind: "cron", Expr: "nope"}, base, time.Time{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.s.Next(tc.at)
			if ok != tc.ok || !got.Equal(tc.want) {
				t.Fatalf("Next = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestFirstAndAfterRun(t *testing.T) {
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	past := Schedule{Kind: "at", At: "2026-01-01T09:00:00Z"}
	if got, ok := past.First(now); !ok || !got.Equal(now) {
		t.Fatalf("First(past at) = %v, %v; want now", got, ok)
	}
	if _, ok := past.AfterRun(now, now); ok {
		t.Fatal("a one-shot job must have no run after its run")
	}
	// Down for ten hours: an hourly job runs once on start, then resumes
	// at the next hour after now (no replay of the missed ticks).
	hourly := Schedule{Kind: "cron", Expr: "0 * * * *"}
	due := now.Add(-10 * time.Hour)
	got, ok := hourly.AfterRun(due, now.Add(5*time.Minute))
	if want := now.Add(time.Hour); !ok || !got.Equal(want) {
		t.Fatalf("AfterRun = %v, %v; want %v", got, ok, want)
	}
}

func FuzzValidate(f *testing.F) {
	f.Add("cron", "*/5 * * * *", "UTC", "", int64(0))
	f.Add("at", "", "", "2026-01-01T00:00:00Z", int64(0))
	f.Add("every", "", "", "", int64(1000))
	f.Fuzz(func(t *testing.T, kind, expr, tz, at string, every int64) {
		s := Schedule{Kind: kind, Expr: expr, Tz: tz, At: at, EveryMs: every}
		if s.Validate() != nil {
			return
		}
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		if next, ok := s.Next(now); ok && !next.After(now) {
			t.Fatalf("Next(%v) = %v, not after", now, next)
		}
	})
}
