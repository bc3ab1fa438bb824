package config

import (
	"os"
	"path/filepath"
	"testing"
)

func TestGatewayToken(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadGatewayToken(dir); !os.IsNotExist(err) {
		t.Fatalf("ReadGatewayToken before creation = %v", err)
	}
	tok, created, err := LoadOrCreateGatewayToken(dir)
	if err != nil || !created || len(tok) != 64 {
		t.Fatalf("create = %q, %v, %v", tok, created, err)
	}
	fi, err := os.Stat(filepath.Join(dir, GatewayTokenFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode = %v, %v", fi.Mode(), err)
	}
	again, created, err := LoadOrCreateGatewayToken(dir)
	if err != nil || created || again != tok {
		t.Errorf("second call = %q, %v, %v; want the same token", again, created, err)
	}
	if got, err := ReadGatewayToken(dir); err != nil || got != tok {
		t.Errorf("ReadGatewayToken = %q, %v", got, err)
	}
	if err := os.WriteFile(filepath.Join(dir, GatewayTokenFile), []byte("  \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadGatewayToken(dir); err == nil {
		t.Error("an empty token file was accepted")
	}
}
