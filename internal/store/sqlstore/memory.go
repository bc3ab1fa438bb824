package sqlstore

import "github.com/switchboardhq/switchboard/internal/store"

// Statements on the memory index that both dialects write alike. Full-text
// search and the vector lookup differ and stay in their store.
const (
	MemoryFiles        = `SELECT path, hash, size, mtime_ns FROM memory_files WHERE scope = ? ORDER BY path`
	MemoryChunksDelete = `DELETE FROM memory_chunks WHERE scope = ?1 AND path = ?2`
	MemoryFileDelete   = `DELETE FROM memory_files WHERE scope = ?1 AND path = ?2`
	MemoryFilePut      = `INSERT INTO memory_files (scope, path, hash, size, mtime_ns) VALUES (?1,?2,?3,?4,?5)
		ON CONFLICT (scope, path) DO UPDATE SET hash = ?3, size = ?4, mtime_ns = ?5`
	MemoryChunks = `SELECT path, start_line, end_line, text FROM memory_chunks WHERE scope = ? ORDER BY path, start_line`
	MemoryVecPut = `INSERT INTO memory_vectors (model, hash, vec) VALUES (?,?,?) ON CONFLICT (model, hash) DO NOTHING`
)

// ScanMemoryFile reads one row of MemoryFiles.
func ScanMemoryFile(sc Scanner) (store.MemoryFile, error) {
	var f store.MemoryFile
	err := sc.Scan(&f.Path, &f.Hash, &f.Size, &f.MtimeNs)
	return f, err
}

// ScanMemoryChunk reads one row of MemoryChunks.
func ScanMemoryChunk(sc Scanner) (store.MemoryChunkRow, error) {
	var c store.MemoryChunkRow
	err := sc.Scan(&c.Path, &c.StartLine, &c.EndLine, &c.Text)
	return c, err
}

// ScanMemoryHit reads one row of a store's memory search: path, start and
// end line, text and relevance.
func ScanMemoryHit(sc Scanner) (store.MemoryHit, error) {
	var h store.MemoryHit
	err := sc.Scan(&h.Path, &h.StartLine, &h.EndLine, &h.Text, &h.Relevance)
	return h, err
}

// ScanVector reads one row of hash and encoded vector into out; a vector
// that does not decode is left out.
func ScanVector(sc Scanner, out map[string][]float32) error {
	var (
		h string
		b []byte
	)
	if err := sc.Scan(&h, &b); err != nil {
		return err
	}
	if v := store.DecodeVector(b); v != nil {
		out[h] = v
	}
	return nil
}
