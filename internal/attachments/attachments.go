// Package attachments owns sessions_spawn's inline attachments
// (docs/spec/reference-behaviour.md §9.5): validating the files a spawning agent passes inline,
// materialising them into the child's workspace under
// .switchboard/attachments/<id>/ with a manifest, the receipt and the
// system-prompt suffix the child sees, removing the folder again, and the
// redaction of attachment contents in persisted sessions_spawn tool calls.
//
// Switchboard keeps attachments under ".switchboard" where the reference
// uses ".openclaw"; every other rule and error string is the reference's.
// Nothing is ever written outside the attachment folder: all validation
// happens before the first write, writes go through an [os.Root] so no
// symbolic link can lead them out of the workspace, and a failure removes
// the folder. It is a leaf: standard library only. The sessions_spawn tool
// and the sub-agent registry (which removes folders on cleanup) use it.
package attachments

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Defaults of tools.sessions_spawn.attachments (docs/spec/reference-behaviour.md §9.5, §13).
const (
	DefaultMaxTotalBytes = 5 * 1024 * 1024
	DefaultMaxFiles      = 50
	DefaultMaxFileBytes  = 1 * 1024 * 1024
)

// RootDir is the attachments root relative to a workspace, in slash form.
// Every attachment folder is a direct child of it.
const RootDir = ".switchboard/attachments"

// ManifestName is the manifest file written into every attachment folder;
// no attachment may have this name.
const ManifestName = ".manifest.json"

// Statuses of an [Error], as sessions_spawn reports them.
const (
	StatusForbidden = "forbidden"
	StatusError     = "error"
)

// Limits are the effective tools.sessions_spawn.attachments settings. A
// non-positive limit means its default (5 MiB total, 50 files, 1 MiB per
// file), as the configuration reads them; the zero Limits therefore has
// attachments disabled. config.AttachmentLimits converts to Limits.
type Limits struct {
	// Enabled allows attachments at all (default false).
	Enabled bool
	// MaxTotalBytes caps the decoded bytes of all files together.
	MaxTotalBytes int
	// MaxFiles caps the number of files.
	MaxFiles int
	// MaxFileBytes caps the decoded bytes of one file.
	MaxFileBytes int
	// RetainOnSessionKeep keeps the folder after a run with cleanup "keep";
	// it is not used here but travels with the limits to the registry.
	RetainOnSessionKeep bool
}

// withDefaults returns l with non-positive limits replaced by the defaults.
func (l Limits) withDefaults() Limits {
	if l.MaxTotalBytes <= 0 {
		l.MaxTotalBytes = DefaultMaxTotalBytes
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultMaxFiles
	}
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = DefaultMaxFileBytes
	}
	return l
}

// File is one attachment as the tool received it.
type File struct {
	// Name is the file name; it is trimmed and must be a plain base name.
	Name string
	// Content is the file's text, or its base64 encoding.
	Content string
	// Encoding is "base64" (exactly, after trimming) for base64 content;
	// anything else means UTF-8 text.
	Encoding string
	// MimeType is informational; it is not validated or stored.
	MimeType string
}

// Receipt describes a materialised attachment folder; sessions_spawn
// returns it as "attachments" in its accepted result.
type Receipt struct {
	Count      int           `json:"count"`
	TotalBytes int           `json:"totalBytes"`
	Files      []ReceiptFile `json:"files"`
	// RelDir is the folder relative to the workspace, in slash form:
	// ".switchboard/attachments/<id>".
	RelDir string `json:"relDir"`
}

// ReceiptFile describes one written file.
type ReceiptFile struct {
	Name   string `json:"name"`
	Bytes  int    `json:"bytes"`
	Sha256 string `json:"sha256"`
}

// manifest is the content of .manifest.json, in the reference's key order.
type manifest struct {
	RelDir     string        `json:"relDir"`
	Count      int           `json:"count"`
	TotalBytes int           `json:"totalBytes"`
	Files      []ReceiptFile `json:"files"`
}

// Error is a rejection sessions_spawn reports as {status, error}: Status
// is [StatusForbidden] or [StatusError] and Message is the reference's
// exact error string.
type Error struct {
	Status  string
	Message string
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

func forbidden(msg string) *Error { return &Error{Status: StatusForbidden, Message: msg} }

func failf(format string, args ...any) *Error {
	return &Error{Status: StatusError, Message: fmt.Sprintf(format, args...)}
}

// Report returns the status and error text sessions_spawn reports for an
// error from [Materialize]: an [*Error]'s own, else "error" and the error's
// text (the reference reports file-system failures by their message).
func Report(err error) (status, message string) {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Status, e.Message
	}
	return StatusError, err.Error()
}

// prepared is one validated attachment, ready to write.
type prepared struct {
	name string
	data []byte
}

// Materialize writes files into a new folder
// <workspace>/.switchboard/attachments/<newID()>/ (creating the workspace
// and the attachments root, mode 0700, as needed) and returns the receipt
// and the folder's real absolute path.
//
// An empty files writes nothing and returns (nil, "", nil). Attachments
// that are disabled or break a rule of docs/spec/reference-behaviour.md §9.5 give an [*Error]
// with the reference's status and message; file-system failures give
// other errors (see [Report]). Every file is validated before anything is
// written. Files and the manifest are created exclusively with mode 0600.
// A symbolic link at .switchboard or .switchboard/attachments may point
// elsewhere inside the workspace but never out of it. On any failure after
// the folder was created the folder is removed again.
//
// newID returns the folder name; nil means a random UUID. It must be a
// plain name of letters, digits, '-' and '_'.
func Materialize(workspace string, files []File, lim Limits, newID func() string) (*Receipt, string, error) {
	if len(files) == 0 {
		return nil, "", nil
	}
	lim = lim.withDefaults()
	if !lim.Enabled {
		return nil, "", forbidden("attachments are disabled for sessions_spawn (enable tools.sessions_spawn.attachments.enabled)")
	}
	if len(files) > lim.MaxFiles {
		return nil, "", failf("attachments_file_count_exceeded (maxFiles=%d)", lim.MaxFiles)
	}
	ps, receipt, err := prepare(files, lim)
	if err != nil {
		return nil, "", err
	}
	if newID == nil {
		newID = newUUID
	}
	id := newID()
	if !validID(id) {
		return nil, "", fmt.Errorf("attachments: invalid folder id %q", id)
	}
	receipt.RelDir = path.Join(RootDir, id)

	absDir, err := write(workspace, receipt, ps)
	if err != nil {
		return nil, "", err
	}
	return receipt, absDir, nil
}

// prepare validates files in order (docs/spec/reference-behaviour.md §9.5) and returns their
// bytes and the receipt without RelDir.
func prepare(files []File, lim Limits) ([]prepared, *Receipt, error) {
	seen := make(map[string]bool, len(files))
	ps := make([]prepared, 0, len(files))
	r := &Receipt{Files: make([]ReceiptFile, 0, len(files))}
	for _, f := range files {
		name := jsTrim(f.Name)
		if err := checkName(name); err != nil {
			return nil, nil, err
		}
		if seen[name] {
			return nil, nil, failf("attachments_duplicate_name (%s)", name)
		}
		seen[name] = true

		var data []byte
		if jsTrim(f.Encoding) == "base64" {
			b, ok := decodeStrictBase64(f.Content, lim.MaxFileBytes)
			if !ok {
				return nil, nil, failf("attachments_invalid_base64_or_too_large")
			}
			data = b
		} else {
			if n := len(f.Content); n > lim.MaxFileBytes {
				return nil, nil, failf("attachments_file_bytes_exceeded (name=%s bytes=%d maxFileBytes=%d)", name, n, lim.MaxFileBytes)
			}
			data = []byte(f.Content)
		}
		// The decoders above already bound a file; this is the reference's
		// second, common check.
		if n := len(data); n > lim.MaxFileBytes {
			return nil, nil, failf("attachments_file_bytes_exceeded (name=%s bytes=%d maxFileBytes=%d)", name, n, lim.MaxFileBytes)
		}
		r.TotalBytes += len(data)
		if r.TotalBytes > lim.MaxTotalBytes {
			return nil, nil, failf("attachments_total_bytes_exceeded (totalBytes=%d maxTotalBytes=%d)", r.TotalBytes, lim.MaxTotalBytes)
		}
		sum := sha256.Sum256(data)
		r.Files = append(r.Files, ReceiptFile{Name: name, Bytes: len(data), Sha256: hex.EncodeToString(sum[:])})
		ps = append(ps, prepared{name: name, data: data})
	}
	r.Count = len(r.Files)
	return ps, r, nil
}

// write creates the folder receipt.RelDir in workspace, writes ps and the
// manifest into it and returns its real absolute path. On failure it
// removes the folder if it created it.
func write(workspace string, receipt *Receipt, ps []prepared) (absDir string, err error) {
	if strings.TrimSpace(workspace) == "" {
		return "", errors.New("attachments: no workspace")
	}
	ws, err := filepath.Abs(workspace)
	if err != nil {
		return "", fmt.Errorf("attachments: %w", err)
	}
	if err := os.MkdirAll(ws, 0o700); err != nil {
		return "", fmt.Errorf("attachments: %w", err)
	}
	realWS, err := filepath.EvalSymlinks(ws)
	if err != nil {
		return "", fmt.Errorf("attachments: %w", err)
	}
	root, err := os.OpenRoot(realWS)
	if err != nil {
		return "", fmt.Errorf("attachments: %w", err)
	}
	defer root.Close()

	// MkdirAll in the root follows a link at .switchboard or attachments
	// only while it stays inside the workspace.
	if err := root.MkdirAll(filepath.FromSlash(RootDir), 0o700); err != nil {
		return "", fmt.Errorf("attachments: %w", err)
	}
	if err := checkInside(realWS, filepath.Join(realWS, filepath.FromSlash(RootDir))); err != nil {
		return "", err
	}
	relDir := filepath.FromSlash(receipt.RelDir)
	if err := root.Mkdir(relDir, 0o700); err != nil { // exclusive: never reuse a folder
		return "", fmt.Errorf("attachments: %w", err)
	}
	defer func() {
		if err != nil {
			if rmErr := root.RemoveAll(relDir); rmErr != nil {
				err = errors.Join(err, fmt.Errorf("attachments: cleanup: %w", rmErr))
			}
		}
	}()
	dir, err := root.OpenRoot(relDir)
	if err != nil {
		return "", fmt.Errorf("attachments: %w", err)
	}
	defer dir.Close()
	for _, p := range ps {
		if err := writeExclusive(dir, p.name, p.data); err != nil {
			return "", err
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf) // Encode adds the trailing newline
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(manifest{RelDir: receipt.RelDir, Count: receipt.Count, TotalBytes: receipt.TotalBytes, Files: receipt.Files}); err != nil {
		return "", fmt.Errorf("attachments: manifest: %w", err)
	}
	if err := writeExclusive(dir, ManifestName, buf.Bytes()); err != nil {
		return "", err
	}
	absDir, err = filepath.EvalSymlinks(filepath.Join(realWS, relDir))
	if err != nil {
		return "", fmt.Errorf("attachments: %w", err)
	}
	if err := checkInside(realWS, absDir); err != nil {
		return "", err
	}
	return absDir, nil
}

// writeExclusive creates name in dir (failing if it exists) with mode 0600
// and writes data.
func writeExclusive(dir *os.Root, name string, data []byte) error {
	f, err := dir.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("attachments: %w", err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("attachments: %w", err)
	}
	return nil
}

// checkInside fails unless p's real path is base or below it. base must
// be a real path.
func checkInside(base, p string) error {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return fmt.Errorf("attachments: %w", err)
	}
	if !within(base, real) {
		return fmt.Errorf("attachments: %s leads outside the workspace", p)
	}
	return nil
}

// within reports whether p is base or below it (both clean and absolute).
func within(base, p string) bool {
	rel, err := filepath.Rel(base, p)
	if err != nil {
		return false
	}
	return rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel))
}

// Remove deletes the attachment folder absDir of workspace. It removes it
// only when absDir's real path (symbolic links resolved) lies strictly
// inside the real path of <workspace>/.switchboard/attachments, which must
// itself be inside the workspace; otherwise it returns an error and
// removes nothing. A folder that no longer exists is not an error.
func Remove(workspace, absDir string) error {
	if strings.TrimSpace(workspace) == "" || strings.TrimSpace(absDir) == "" {
		return errors.New("attachments.remove: no workspace or folder")
	}
	ws, err := filepath.Abs(workspace)
	if err != nil {
		return fmt.Errorf("attachments.remove: %w", err)
	}
	if !filepath.IsAbs(absDir) {
		absDir = filepath.Join(ws, absDir)
	}
	realDir, err := filepath.EvalSymlinks(absDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("attachments.remove: %w", err)
	}
	realWS, err := filepath.EvalSymlinks(ws)
	if err != nil {
		return fmt.Errorf("attachments.remove: %w", err)
	}
	realRoot, err := filepath.EvalSymlinks(filepath.Join(ws, filepath.FromSlash(RootDir)))
	if err != nil {
		return fmt.Errorf("attachments.remove: %s is not inside %s: %w", absDir, RootDir, err)
	}
	if !within(realWS, realRoot) {
		return fmt.Errorf("attachments.remove: %s leads outside the workspace", RootDir)
	}
	rel, err := filepath.Rel(realRoot, realDir)
	if err != nil || rel == "." || !within(realRoot, realDir) {
		return fmt.Errorf("attachments.remove: %s is not inside %s", absDir, RootDir)
	}
	root, err := os.OpenRoot(realRoot)
	if err != nil {
		return fmt.Errorf("attachments.remove: %w", err)
	}
	defer root.Close()
	if err := root.RemoveAll(rel); err != nil {
		return fmt.Errorf("attachments.remove: %w", err)
	}
	return nil
}

// validID reports whether id is a safe folder name.
func validID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, c := range []byte(id) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
