package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/lazy"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/store"
)

// safeSessionID is what a session id must look like to become a file name.
func safeSessionID() *regexp.Regexp { return safeSessionIDValue.Get() }

// safeSessionIDValue is built on the first call of safeSessionID.
var safeSessionIDValue = lazy.Value[*regexp.Regexp]{New: buildSafeSessionID}

// buildSafeSessionID builds safeSessionID's value.
func buildSafeSessionID() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
}

// handleSessionsExport writes the session's current transcript as JSONL (the
// reference's transcript file format) to
// <stateDir>/agents/<agentId>/sessions/<sessionId>.jsonl — the transcriptPath
// sessions_list reports — atomically (temp file, then rename).
func (s *Server) handleSessionsExport(ctx context.Context, cl *call) (any, error) {
	var p wire.SessionsExportParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	if s.cfg.StateDir == "" {
		return nil, wire.NewError(wire.CodeUnavailable, "sessions.export is not enabled")
	}
	key := s.canonicalKey(p.Key, s.agentID(p.AgentID))
	sess, err := s.cfg.Store.GetSession(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, invalid("No session found: " + p.Key)
	}
	if err != nil {
		return nil, err
	}
	if !safeSessionID().MatchString(sess.SessionID) {
		return nil, invalid("session id is not a safe file name: " + sess.SessionID)
	}
	agentID := cmp.Or(sess.AgentID, sessionkey.AgentID(key))
	dir := filepath.Join(s.cfg.StateDir, "agents", agentID, "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("sessions.export: %w", err)
	}
	path := filepath.Join(dir, sess.SessionID+".jsonl")
	tmp, err := os.CreateTemp(dir, ".export-*")
	if err != nil {
		return nil, fmt.Errorf("sessions.export: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if err := store.ExportTranscript(ctx, s.cfg.Store, key, tmp); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("sessions.export: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("sessions.export: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nil, fmt.Errorf("sessions.export: %w", err)
	}
	return wire.SessionsExportResult{OK: true, Key: key, SessionID: sess.SessionID, Path: path}, nil
}
