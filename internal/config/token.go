package config

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// GatewayTokenFile holds the generated gateway token inside the state dir.
const GatewayTokenFile = "gateway.token"

// LoadOrCreateGatewayToken returns the gateway token stored in stateDir, creating
// one (32 random bytes, hex, file mode 0600, exclusive create) when there is
// none. created reports whether it was made now.
func LoadOrCreateGatewayToken(stateDir string) (token string, created bool, err error) {
	path := filepath.Join(stateDir, GatewayTokenFile)
	if tok, err := ReadGatewayToken(stateDir); err == nil {
		return tok, false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", false, err
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", false, fmt.Errorf("config: gateway token: %w", err)
	}
	tok := hex.EncodeToString(b[:])
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) { // another process made it first
		tok, err := ReadGatewayToken(stateDir)
		return tok, false, err
	}
	if err != nil {
		return "", false, fmt.Errorf("config: gateway token: %w", err)
	}
	if _, err := f.WriteString(tok + "\n"); err != nil {
		f.Close()
		os.Remove(path)
		return "", false, fmt.Errorf("config: gateway token: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", false, fmt.Errorf("config: gateway token: %w", err)
	}
	return tok, true, nil
}

// ReadGatewayToken reads the generated gateway token of stateDir.
func ReadGatewayToken(stateDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(stateDir, GatewayTokenFile))
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("config: %s is empty", filepath.Join(stateDir, GatewayTokenFile))
	}
	return tok, nil
}
