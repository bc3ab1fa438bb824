package automation

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlite"
)

// TestDeliveryTarget: where an automation's reply goes — a named chat, or
// "last": where the main session last talked (its delivery context, else
// its last route), with to replacing the recipient; nowhere when that is
// unknown.
func TestDeliveryTarget(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	put := func(key string, fn func(*store.Session)) {
		if _, err := st.UpdateSession(ctx, key, true, func(s *store.Session) error { s.SessionID = key; fn(s); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	put("agent:main:main", func(s *store.Session) {
		s.DeliveryContext = &store.DeliveryContext{Channel: "telegram", To: "7", AccountID: "default"}
	})
	put("agent:ops:main", func(s *store.Session) { s.LastChannel, s.LastTo = "irc", "#ops" })
	put("agent:idle:main", func(*store.Session) {})
	for _, tc := range []struct {
		main, channel, to string
		want              *store.DeliveryContext
	}{
		{"agent:main:main", "", "x", nil},
		{"agent:main:main", "IRC", "#room", &store.DeliveryContext{Channel: "irc", To: "#room"}},
		{"agent:main:main", "irc", " ", nil},
		{"agent:main:main", "last", "", &store.DeliveryContext{Channel: "telegram", To: "7", AccountID: "default"}},
		{"agent:main:main", "LAST", "9", &store.DeliveryContext{Channel: "telegram", To: "9", AccountID: "default"}},
		{"agent:ops:main", "last", "", &store.DeliveryContext{Channel: "irc", To: "#ops"}},
		{"agent:idle:main", "last", "", nil},
		{"agent:none:main", "last", "", nil},
	} {
		got, err := deliveryTarget(ctx, st, tc.main, tc.channel, tc.to, "")
		if err != nil {
			t.Fatal(err)
		}
		if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
			t.Errorf("deliveryTarget(%s, %q, %q) = %+v, want %+v", tc.main, tc.channel, tc.to, got, tc.want)
		}
	}
}
