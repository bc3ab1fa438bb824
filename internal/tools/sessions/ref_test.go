package sessions

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tools"
)

const (
	idMain   = "11111111-1111-4111-8111-111111111111"
	idChild  = "22222222-2222-4222-8222-222222222222"
	idOther  = "33333333-3333-4333-8333-333333333333"
	idDup    = "44444444-4444-4444-8444-444444444444"
	idGlobal = "55555555-5555-4555-8555-555555555555"
	idNone   = "99999999-9999-4999-8999-999999999999"
)

// seedRefs seeds the sessions the resolution tests use: the sandboxed
// requester's tree, an unrelated session, a slug-keyed session, two
// sessions sharing a sessionId, and the reserved global session.
func seedRefs(e *testEnv) {
	e.sess(store.Session{Key: "agent:main:main", SessionID: idMain})
	e.sess(store.Session{Key: "agent:main:discord:group:req", SessionID: "req-session"})
	e.sess(store.Session{Key: "agent:main:subagent:child", SessionID: idChild, SpawnedBy: "agent:main:discord:group:req"})
	e.sess(store.Session{Key: "agent:main:discord:group:other", SessionID: idOther})
	e.sess(store.Session{Key: "agent:main:random-slug", SessionID: "slug-session"})
	e.sess(store.Session{Key: "agent:main:dup-a", SessionID: idDup, UpdatedAt: testNow.Add(-3 * 60e9)})
	e.sess(store.Session{Key: "agent:main:dup-b", SessionID: idDup, UpdatedAt: testNow.Add(-2 * 60e9)})
	e.sess(store.Session{Key: "global", SessionID: idGlobal})
}

func TestResolveRef(t *testing.T) {
	const sandboxReq = "agent:main:discord:group:req"
	tests := []struct {
		name   string
		cfg    string
		caller tools.Caller
		raw    string
		want   refResult
		fail   *refError
	}{
		// Looks like a key: no lookup, canonical key, display mapping.
		{name: "main alias", caller: mainCaller, raw: "main",
			want: refResult{Key: "agent:main:main", Display: "main"}},
		{name: "canonical main stays canonical in display", caller: mainCaller, raw: "agent:main:main",
			want: refResult{Key: "agent:main:main", Display: "agent:main:main"}},
		{name: "group key", caller: mainCaller, raw: "agent:main:discord:group:other",
			want: refResult{Key: "agent:main:discord:group:other", Display: "agent:main:discord:group:other"}},
		{name: "legacy cron key gets the requester agent", caller: tools.Caller{SessionKey: "agent:ops:main"}, raw: "cron:job-1",
			want: refResult{Key: "agent:ops:cron:job-1", Display: "cron:job-1"}},
		{name: "missing key needs no lookup", caller: mainCaller, raw: "agent:main:nothing-here",
			want: refResult{Key: "agent:main:nothing-here", Display: "agent:main:nothing-here"}},
		{name: "main under a custom main key", cfg: `{session: {mainKey: " Primary "}}`, caller: noSession, raw: "main",
			want: refResult{Key: "agent:main:primary", Display: "main"}},
		{name: "main under global scope", cfg: `{session: {scope: "global"}}`, caller: noSession, raw: "main",
			want: refResult{Key: "global", Display: "main"}},
		{name: "global under global scope", cfg: `{session: {scope: "global"}}`, caller: noSession, raw: "global",
			want: refResult{Key: "global", Display: "main"}},

		// Session-id candidates: first as a key, then as a sessionId.
		{name: "sessionId", caller: mainCaller, raw: idOther,
			want: refResult{Key: "agent:main:discord:group:other", Display: "agent:main:discord:group:other", ViaSessionID: true}},
		{name: "sessionId upper case is still a candidate but ids match exactly", caller: mainCaller,
			raw:  "33333333-3333-4333-8333-33333333333A",
			fail: &refError{Status: "error", Message: "No session found: 33333333-3333-4333-8333-33333333333A"}},
		{name: "sessionId of the main session shows canonical", caller: mainCaller, raw: idMain,
			want: refResult{Key: "agent:main:main", Display: "agent:main:main", ViaSessionID: true}},
		{name: "sessionId of global under global scope shows main", cfg: `{session: {scope: "global"}}`, caller: mainCaller, raw: idGlobal,
			want: refResult{Key: "global", Display: "main", ViaSessionID: true}},
		{name: "slug resolves as a key first", caller: mainCaller, raw: "random-slug",
			want: refResult{Key: "agent:main:random-slug", Display: "agent:main:random-slug"}},
		{name: "slug that is a sessionId", caller: mainCaller, raw: "slug-session",
			want: refResult{Key: "agent:main:random-slug", Display: "agent:main:random-slug", ViaSessionID: true}},
		{name: "upper-case agent prefix is a candidate resolved as a key", caller: mainCaller, raw: "AGENT:Main:Main",
			want: refResult{Key: "agent:main:main", Display: "agent:main:main"}},
		{name: "subagent legacy key is a candidate", caller: mainCaller, raw: "subagent:child",
			want: refResult{Key: "agent:main:subagent:child", Display: "agent:main:subagent:child"}},
		{name: "unknown sessionId", caller: mainCaller, raw: idNone,
			fail: &refError{Status: "error", Message: "No session found: " + idNone}},
		{name: "unknown slug", caller: mainCaller, raw: "sess-group",
			fail: &refError{Status: "error", Message: "No session found: sess-group"}},
		{name: "ambiguous sessionId", caller: mainCaller, raw: idDup,
			fail: &refError{Status: "error", Message: "Multiple sessions found for sessionId: " + idDup + " (agent:main:dup-b, agent:main:dup-a)"}},

		// Sandbox-restricted requester.
		{name: "restricted: own key", caller: sandboxed(sandboxReq), raw: sandboxReq,
			want: refResult{Key: sandboxReq, Display: sandboxReq}},
		{name: "restricted: spawned child key", caller: sandboxed(sandboxReq), raw: "agent:main:subagent:child",
			want: refResult{Key: "agent:main:subagent:child", Display: "agent:main:subagent:child"}},
		{name: "restricted: spawned child sessionId", caller: sandboxed(sandboxReq), raw: idChild,
			want: refResult{Key: "agent:main:subagent:child", Display: "agent:main:subagent:child", ViaSessionID: true}},
		{name: "restricted: child by legacy subagent key", caller: sandboxed(sandboxReq), raw: "subagent:child",
			want: refResult{Key: "agent:main:subagent:child", Display: "agent:main:subagent:child"}},
		{name: "restricted: other key", caller: sandboxed(sandboxReq), raw: "agent:main:discord:group:other",
			fail: &refError{Status: policy.StatusForbidden, Display: "agent:main:discord:group:other",
				Message: "Session not visible from this sandboxed agent session: agent:main:discord:group:other"}},
		{name: "restricted: main alias", caller: sandboxed(sandboxReq), raw: "main",
			fail: &refError{Status: policy.StatusForbidden, Display: "main",
				Message: "Session not visible from this sandboxed agent session: main"}},
		{name: "restricted: other sessionId", caller: sandboxed(sandboxReq), raw: idOther,
			fail: &refError{Status: policy.StatusForbidden, Message: "Session not visible from this sandboxed agent session: " + idOther}},
		{name: "restricted: own sessionId is not spawned by itself", caller: sandboxed(sandboxReq), raw: "req-session",
			fail: &refError{Status: policy.StatusForbidden, Message: "Session not visible from this sandboxed agent session: req-session"}},
		{name: "restricted: unknown sessionId", caller: sandboxed(sandboxReq), raw: idNone,
			fail: &refError{Status: policy.StatusForbidden, Message: "Session not visible from this sandboxed agent session: " + idNone}},
		{name: "restricted: ambiguous sessionId", caller: sandboxed(sandboxReq), raw: idDup,
			fail: &refError{Status: policy.StatusForbidden, Message: "Session not visible from this sandboxed agent session: " + idDup}},
		{name: "restricted: global sessionId", cfg: `{session: {scope: "global"}}`, caller: sandboxed(sandboxReq), raw: idGlobal,
			fail: &refError{Status: policy.StatusForbidden, Message: "Session not visible from this sandboxed agent session: " + idGlobal}},

		// Not restricted although sandboxed.
		{name: "sandboxed sub-agent is not restricted", caller: sandboxed("agent:main:subagent:child"), raw: "agent:main:discord:group:other",
			want: refResult{Key: "agent:main:discord:group:other", Display: "agent:main:discord:group:other"}},
		{name: "sandbox clamp all is not restricted", cfg: `{agents: {defaults: {sandbox: {sessionToolsVisibility: "all"}}}}`,
			caller: sandboxed(sandboxReq), raw: idOther,
			want: refResult{Key: "agent:main:discord:group:other", Display: "agent:main:discord:group:other", ViaSessionID: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.cfg)
			seedRefs(e)
			c, err := e.tools.newCallCtx(t.Context(), tt.caller, policy.ActionHistory)
			if err != nil {
				t.Fatal(err)
			}
			got, fail := e.tools.resolveRef(t.Context(), c, tt.raw)
			if diff := cmp.Diff(tt.fail, fail); diff != "" {
				t.Fatalf("failure (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

// A store error while resolving a sessionId is reported as the tool error,
// or hidden behind the forbidden text for a restricted caller.
func TestResolveRefStoreError(t *testing.T) {
	wrap := withStore(func(s Store) Store { return &failingStore{Store: s, failByID: true} })
	e := newEnv(t, "", wrap)
	seedRefs(e)
	c, _ := e.tools.newCallCtx(t.Context(), mainCaller, policy.ActionHistory)
	_, fail := e.tools.resolveRef(t.Context(), c, idOther)
	if want := (&refError{Status: "error", Message: errInjected.Error()}); !cmp.Equal(fail, want) {
		t.Errorf("got %+v, want %+v", fail, want)
	}
	c, _ = e.tools.newCallCtx(t.Context(), sandboxed("agent:main:discord:group:req"), policy.ActionHistory)
	_, fail = e.tools.resolveRef(t.Context(), c, idChild)
	if want := (&refError{Status: "forbidden", Message: "Session not visible from this sandboxed agent session: " + idChild}); !cmp.Equal(fail, want) {
		t.Errorf("got %+v, want %+v", fail, want)
	}
}

func TestSessionNotFoundText(t *testing.T) {
	if got, want := sessionNotFound("abc"), "Session not found: abc (use the full sessionKey from sessions_list)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
