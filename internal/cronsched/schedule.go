// Package cronsched holds the schedule model of cron jobs (one-shot "at",
// fixed "every" intervals and cron expressions with a time zone) and the pure
// next-run computation the scheduler uses. It parses cron expressions with
// github.com/netresearch/go-cron and never runs timers itself: the scheduler
// keeps the next run time in the store.
package cronsched

import (
	"errors"
	"fmt"
	"github.com/switchboardhq/switchboard/internal/lazy"
	"strings"
	"time"

	gocron "github.com/netresearch/go-cron"
)

// Schedule is a job's schedule in the reference's wire shape:
// {kind:"at", at}, {kind:"every", everyMs, anchorMs?} or {kind:"cron", expr, tz?}.
type Schedule struct {
	Kind     string `json:"kind"`
	At       string `json:"at,omitempty"`
	EveryMs  int64  `json:"everyMs,omitempty"`
	AnchorMs int64  `json:"anchorMs,omitempty"`
	Expr     string `json:"expr,omitempty"`
	Tz       string `json:"tz,omitempty"`
}

// minEvery is the shortest accepted interval.
const minEvery = time.Second

var parser = lazy.Value[gocron.Parser]{New: newParser}

func newParser() gocron.Parser {
	return gocron.MustNewParser(gocron.Minute | gocron.Hour | gocron.Dom | gocron.Month | gocron.Dow | gocron.Descriptor)
}

// Validate reports whether s is a usable schedule, with a message naming the
// bad field.
func (s Schedule) Validate() error {
	switch s.Kind {
	case "at":
		if _, err := s.atTime(); err != nil {
			return err
		}
	case "every":
		if time.Duration(s.EveryMs)*time.Millisecond < minEvery {
			return fmt.Errorf("schedule.everyMs must be at least %d", minEvery.Milliseconds())
		}
		if s.AnchorMs < 0 {
			return errors.New("schedule.anchorMs must not be negative")
		}
	case "cron":
		if _, err := s.cronSchedule(); err != nil {
			return err
		}
	case "":
		return errors.New("schedule.kind is required (at, every or cron)")
	default:
		return fmt.Errorf("schedule.kind %q is not one of at, every, cron", s.Kind)
	}
	return nil
}

func (s Schedule) atTime() (time.Time, error) {
	if s.At == "" {
		return time.Time{}, errors.New("schedule.at is required for kind at")
	}
	t, err := time.Parse(time.RFC3339Nano, s.At)
	if err != nil {
		return time.Time{}, fmt.Errorf("schedule.at %q is not an RFC 3339 time: %w", s.At, err)
	}
	return t, nil
}

func (s Schedule) cronSchedule() (gocron.Schedule, error) {
	expr := strings.TrimSpace(s.Expr)
	if expr == "" {
		return nil, errors.New("schedule.expr is required for kind cron")
	}
	if strings.HasPrefix(expr, "CRON_TZ=") || strings.HasPrefix(expr, "TZ=") {
		return nil, errors.New("schedule.expr must not carry a time zone; use schedule.tz")
	}
	if s.Tz != "" {
		if _, err := time.LoadLocation(s.Tz); err != nil {
			return nil, fmt.Errorf("schedule.tz %q: %w", s.Tz, err)
		}
		expr = "CRON_TZ=" + s.Tz + " " + expr
	}
	sch, err := parser.Get().Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("schedule.expr %q: %w", s.Expr, err)
	}
	return sch, nil
}

// Next returns the first run time strictly after after, or false when the
// schedule has no further run (a one-shot "at" whose time is not after
// after... is still returned once: see First).
func (s Schedule) Next(after time.Time) (time.Time, bool) {
	switch s.Kind {
	case "at":
		t, err := s.atTime()
		if err != nil || !t.After(after) {
			return time.Time{}, false
		}
		return t, true
	case "every":
		every := time.Duration(s.EveryMs) * time.Millisecond
		if every < minEvery {
			return time.Time{}, false
		}
		anchor := time.UnixMilli(s.AnchorMs)
		if after.Before(anchor) {
			return anchor, true
		}
		n := after.Sub(anchor)/every + 1
		return anchor.Add(n * every), true
	case "cron":
		sch, err := s.cronSchedule()
		if err != nil {
			return time.Time{}, false
		}
		t := sch.Next(after)
		return t, !t.IsZero()
	}
	return time.Time{}, false
}

// First is the first run time of a job created at now: a one-shot "at" in
// the past runs at once (returns now), other kinds their next time after now.
func (s Schedule) First(now time.Time) (time.Time, bool) {
	if s.Kind == "at" {
		t, err := s.atTime()
		if err != nil {
			return time.Time{}, false
		}
		if t.Before(now) {
			return now, true
		}
		return t, true
	}
	return s.Next(now)
}

// AfterRun is the next run time once the tick due was taken at now. Missed
// ticks are not replayed: the next time is computed from now, so a job whose
// ticks passed while the gateway was down runs once and then resumes its
// cadence. A one-shot job has none.
func (s Schedule) AfterRun(due, now time.Time) (time.Time, bool) {
	if s.Kind == "at" {
		return time.Time{}, false
	}
	from := due
	if now.After(from) {
		from = now
	}
	return s.Next(from)
}
