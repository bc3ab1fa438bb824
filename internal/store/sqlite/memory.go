package sqlite

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlstore"
)

var _ store.MemoryStore = (*Store)(nil)

const (
	qMemoryFTSDelete = `DELETE FROM memory_fts WHERE rowid IN
		(SELECT id FROM memory_chunks WHERE scope = ?1 AND path = ?2)`
	qMemoryChunksDelete = sqlstore.MemoryChunksDelete
	qMemoryFileDelete   = sqlstore.MemoryFileDelete
	qMemoryFilePut      = sqlstore.MemoryFilePut
	qMemoryChunkPut     = `INSERT INTO memory_chunks (scope, path, start_line, end_line, text) VALUES (?,?,?,?,?)`
	qMemoryFTSPut       = `INSERT INTO memory_fts (rowid, search) VALUES (?, ?)`
	// bm25() is negative, more negative = more relevant.
	qMemorySearch = `SELECT c.path, c.start_line, c.end_line, c.text, -bm25(memory_fts) AS rel
		FROM memory_fts JOIN memory_chunks c ON c.id = memory_fts.rowid
		WHERE memory_fts MATCH ?1 AND c.scope = ?2
		ORDER BY rel DESC, c.path, c.start_line LIMIT ?3`
)

// deleteMemoryFile removes path's chunks and row in tx.
func deleteMemoryFile(ctx context.Context, tx wtx, scope, path string) error {
	for _, q := range []string{qMemoryFTSDelete, qMemoryChunksDelete, qMemoryFileDelete} {
		if _, err := tx.ExecContext(ctx, q, scope, path); err != nil {
			return err
		}
	}
	return nil
}

// PutMemoryFile implements store.MemoryStore.
func (s *Store) PutMemoryFile(ctx context.Context, scope string, f store.MemoryFile, chunks []store.MemoryChunk) error {
	if err := s.checkOpen("PutMemoryFile"); err != nil {
		return err
	}
	if f.Path == "" {
		return errors.New("sqlite.PutMemoryFile: file without path")
	}
	err := s.writeTx(ctx, func(ctx context.Context, tx wtx) error {
		for _, q := range []string{qMemoryFTSDelete, qMemoryChunksDelete} {
			if _, err := tx.ExecContext(ctx, q, scope, f.Path); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, qMemoryFilePut, scope, f.Path, f.Hash, f.Size, f.MtimeNs); err != nil {
			return err
		}
		for _, c := range chunks {
			res, err := tx.ExecContext(ctx, qMemoryChunkPut, scope, f.Path, c.StartLine, c.EndLine, c.Text)
			if err != nil {
				return err
			}
			id, err := res.LastInsertId()
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, qMemoryFTSPut, id, c.Search); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite.PutMemoryFile %q: %w", f.Path, err)
	}
	return nil
}

// DeleteMemoryFile implements store.MemoryStore.
func (s *Store) DeleteMemoryFile(ctx context.Context, scope, path string) error {
	if err := s.checkOpen("DeleteMemoryFile"); err != nil {
		return err
	}
	if err := s.writeTx(ctx, func(ctx context.Context, tx wtx) error { return deleteMemoryFile(ctx, tx, scope, path) }); err != nil {
		return fmt.Errorf("sqlite.DeleteMemoryFile %q: %w", path, err)
	}
	return nil
}

// ftsQuery renders terms as an FTS5 query: each term a quoted phrase, all
// of them required. Words hold only letters, digits and '_' (the
// store.MemoryStore contract), so no quoting is needed inside a phrase.
func ftsQuery(terms [][]string) string {
	parts := make([]string, 0, len(terms))
	for _, t := range terms {
		if len(t) == 0 {
			continue
		}
		parts = append(parts, `"`+strings.ReplaceAll(strings.Join(t, " "), `"`, "")+`"`)
	}
	return strings.Join(parts, " AND ")
}

// SearchMemory implements store.MemoryStore.
func (s *Store) SearchMemory(ctx context.Context, scope string, terms [][]string, limit int) ([]store.MemoryHit, error) {
	if err := s.checkOpen("SearchMemory"); err != nil {
		return nil, err
	}
	q := ftsQuery(terms)
	if q == "" || limit <= 0 {
		return nil, nil
	}
	out, err := sqlstore.All(ctx, readers{s}, 0, sqlstore.ScanMemoryHit, qMemorySearch, q, scope, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite.SearchMemory: %w", err)
	}
	return out, nil
}

var _ store.MemoryVectorStore = (*Store)(nil)

const (
	qMemoryVecPut   = sqlstore.MemoryVecPut
	qMemoryVecsHead = `SELECT hash, vec FROM memory_vectors WHERE model = ? AND hash IN (`
	// vectorBatch bounds the hashes of one query (SQLite's variable limit
	// is far above it).
	vectorBatch = 500
)

// MemoryVectors implements store.MemoryVectorStore.
func (s *Store) MemoryVectors(ctx context.Context, model string, hashes []string) (map[string][]float32, error) {
	if err := s.checkOpen("MemoryVectors"); err != nil {
		return nil, err
	}
	out := make(map[string][]float32, len(hashes))
	for start := 0; start < len(hashes); start += vectorBatch {
		batch := hashes[start:min(start+vectorBatch, len(hashes))]
		args := make([]any, 0, len(batch)+1)
		args = append(args, model)
		for _, h := range batch {
			args = append(args, h)
		}
		q := qMemoryVecsHead + strings.TrimSuffix(strings.Repeat("?,", len(batch)), ",") + ")"
		if err := s.scanVectors(ctx, q, args, out); err != nil {
			return nil, fmt.Errorf("sqlite.MemoryVectors: %w", err)
		}
	}
	return out, nil
}

func (s *Store) scanVectors(ctx context.Context, q string, args []any, out map[string][]float32) error {
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := sqlstore.ScanVector(rows, out); err != nil {
			return err
		}
	}
	return rows.Err()
}

// PutMemoryVectors implements store.MemoryVectorStore.
func (s *Store) PutMemoryVectors(ctx context.Context, model string, vecs map[string][]float32) error {
	if err := s.checkOpen("PutMemoryVectors"); err != nil {
		return err
	}
	err := s.writeTx(ctx, func(ctx context.Context, tx wtx) error {
		for h, v := range vecs {
			if _, err := tx.ExecContext(ctx, qMemoryVecPut, model, h, store.EncodeVector(v)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite.PutMemoryVectors: %w", err)
	}
	return nil
}
