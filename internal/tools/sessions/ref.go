package sessions

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/store"
)

// Texts of reference resolution (docs/spec/reference-behaviour.md §2.4).
const (
	// notVisiblePrefix starts the forbidden error of a sandbox-restricted
	// caller; the caller's input follows.
	notVisiblePrefix = "Session not visible from this sandboxed agent session: "
	// noSessionPrefix is the gateway's sessions.resolve error for an id
	// that matches no (visible) session; the reference tools pass it on.
	noSessionPrefix = "No session found: "
)

// sessionNotFound is the reference's fallback text when resolving a
// session id fails without a message of its own.
func sessionNotFound(raw string) string {
	return "Session not found: " + raw + " (use the full sessionKey from sessions_list)"
}

// refResult is a resolved target.
type refResult struct {
	Key          string // canonical store key
	Display      string // display key (docs/spec/reference-behaviour.md §2.3)
	ViaSessionID bool
}

// refError is a resolution failure with the tool status ("error" or
// "forbidden"). Display is set only when the target was resolved and then
// refused by the sandbox's spawned-set check (sessions_send reports it as
// sessionKey).
type refError struct {
	Status, Message string
	Display         string
}

// resolveRef resolves the sessionKey parameter of sessions_history and
// sessions_send, which may be a session key or a sessionId (docs/spec/reference-behaviour.md §2.4).
//
// A session-id candidate (sessionkey.IsSessionIDCandidate) is first looked
// up as a key, then as a sessionId; anything else is taken as a key without
// a lookup. Keys are compared and returned in canonical store form
// (t.storeKey), so "main" and "agent:<id>:main" name the same target. A
// sandbox-restricted caller (docs/spec/reference-behaviour.md §3.3) then only reaches itself and the
// sessions it spawned.
func (t *Tools) resolveRef(ctx context.Context, c *callCtx, raw string) (refResult, *refError) {
	raw = strings.TrimSpace(raw)
	var res refResult
	if sessionkey.IsSessionIDCandidate(raw) {
		r, fail := t.resolveIDCandidate(ctx, c, raw)
		if fail != nil {
			return refResult{}, fail
		}
		res = r
	} else {
		internal := t.alias.Internal(raw)
		res = refResult{Key: t.storeKey(c, internal), Display: t.alias.Display(internal)}
	}
	if c.restrict && !res.ViaSessionID && res.Key != c.requester && !c.spawnedKeys[res.Key] {
		return refResult{}, &refError{Status: policy.StatusForbidden, Message: notVisiblePrefix + raw, Display: res.Display}
	}
	return res, nil
}

// resolveIDCandidate resolves raw first as a key, then as a sessionId, as
// the reference does with two sessions.resolve calls. Visibility follows the
// gateway: a restricted caller (passing spawnedBy) only finds sessions
// spawned by it, never the reserved global/unknown sessions.
func (t *Tools) resolveIDCandidate(ctx context.Context, c *callCtx, raw string) (refResult, *refError) {
	visible := func(s *store.Session) bool {
		return !c.restrict || s.SpawnedBy == c.requester && !sessionkey.IsReserved(s.Key)
	}
	// 1. As a key; any failure falls through to the sessionId lookup.
	if s, err := t.d.Store.GetSession(ctx, t.storeKey(c, raw)); err == nil && visible(s) {
		return refResult{Key: s.Key, Display: t.alias.Display(s.Key)}, nil
	}

	// 2. As a sessionId.
	fail := func(msg string) (refResult, *refError) {
		if c.restrict {
			return refResult{}, &refError{Status: policy.StatusForbidden, Message: notVisiblePrefix + raw}
		}
		if msg == "" {
			msg = sessionNotFound(raw)
		}
		return refResult{}, &refError{Status: "error", Message: msg}
	}
	found, err := t.d.Store.SessionsByID(ctx, raw)
	if err != nil {
		return fail(err.Error())
	}
	found = slices.DeleteFunc(found, func(s *store.Session) bool { return !visible(s) })
	switch len(found) {
	case 0:
		return fail(noSessionPrefix + raw)
	case 1:
		return refResult{Key: found[0].Key, Display: t.alias.Display(found[0].Key), ViaSessionID: true}, nil
	}
	// In the gateway's list order: most recently updated first.
	slices.SortStableFunc(found, func(a, b *store.Session) int {
		if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	keys := make([]string, len(found))
	for i, s := range found {
		keys[i] = s.Key
	}
	return fail(fmt.Sprintf("Multiple sessions found for sessionId: %s (%s)", raw, strings.Join(keys, ", ")))
}
