package httpserve

import (
	"net/http"
	"testing"
)

func TestMountWebhookConflict(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/responses", func(http.ResponseWriter, *http.Request) {})
	if err := MountWebhook(mux, "/tg", http.NotFoundHandler()); err != nil {
		t.Fatal(err)
	}
	if err := MountWebhook(mux, "/v1/responses", http.NotFoundHandler()); err == nil {
		t.Error("conflicting webhook path mounted")
	}
}
