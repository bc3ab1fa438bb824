package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlstore"
)

var _ store.MemoryStore = (*Store)(nil)

const (
	qMemoryChunkPut = `INSERT INTO memory_chunks (scope, path, start_line, end_line, text, search)
		VALUES ($1,$2,$3,$4,$5,$6)`
)

// PutMemoryFile implements store.MemoryStore.
func (s *Store) PutMemoryFile(ctx context.Context, scope string, f store.MemoryFile, chunks []store.MemoryChunk) error {
	if err := s.checkOpen("PutMemoryFile"); err != nil {
		return err
	}
	if f.Path == "" {
		return errors.New("postgres.PutMemoryFile: file without path")
	}
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		// The file row first: its row lock (or the unique index, for a new
		// file) makes a concurrent put of the same file wait, so that its
		// delete then sees these chunks and no file is indexed twice.
		if _, err := tx.Exec(ctx, s.q.memoryFilePut, scope, f.Path, f.Hash, f.Size, f.MtimeNs); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, s.q.memoryChunksDelete, scope, f.Path); err != nil {
			return err
		}
		var b pgx.Batch
		for _, c := range chunks {
			b.Queue(qMemoryChunkPut, scope, f.Path, c.StartLine, c.EndLine, c.Text, c.Search)
		}
		return tx.SendBatch(ctx, &b).Close()
	})
	if err != nil {
		return fmt.Errorf("postgres.PutMemoryFile %q: %w", f.Path, err)
	}
	return nil
}

// DeleteMemoryFile implements store.MemoryStore.
func (s *Store) DeleteMemoryFile(ctx context.Context, scope, path string) error {
	if err := s.checkOpen("DeleteMemoryFile"); err != nil {
		return err
	}
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, s.q.memoryChunksDelete, scope, path); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, s.q.memoryFileDelete, scope, path)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres.DeleteMemoryFile %q: %w", path, err)
	}
	return nil
}

// SearchMemory implements store.MemoryStore: every term is a
// phraseto_tsquery of the 'simple' configuration, all of them ANDed, ranked
// by ts_rank.
func (s *Store) SearchMemory(ctx context.Context, scope string, terms [][]string, limit int) ([]store.MemoryHit, error) {
	if err := s.checkOpen("SearchMemory"); err != nil {
		return nil, err
	}
	args := []any{scope, limit}
	var qs []string
	for _, t := range terms {
		if len(t) == 0 {
			continue
		}
		args = append(args, strings.Join(t, " "))
		qs = append(qs, "phraseto_tsquery('simple'::regconfig, $"+strconv.Itoa(len(args))+")")
	}
	if len(qs) == 0 || limit <= 0 {
		return nil, nil
	}
	q := `WITH q AS (SELECT ` + strings.Join(qs, " && ") + ` AS q)
		SELECT c.path, c.start_line, c.end_line, c.text, ts_rank(c.tsv, q.q)::float8 AS rel
		FROM memory_chunks c, q
		WHERE c.scope = $1 AND c.tsv @@ q.q
		ORDER BY rel DESC, c.path, c.start_line LIMIT $2`
	out, err := sqlstore.All(ctx, poolReads{s}, 0, sqlstore.ScanMemoryHit, q, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres.SearchMemory: %w", err)
	}
	return out, nil
}

var _ store.MemoryVectorStore = (*Store)(nil)

const (
	qMemoryVecs = `SELECT hash, vec FROM memory_vectors WHERE model = $1 AND hash = ANY($2)`
)

// MemoryVectors implements store.MemoryVectorStore.
func (s *Store) MemoryVectors(ctx context.Context, model string, hashes []string) (map[string][]float32, error) {
	if err := s.checkOpen("MemoryVectors"); err != nil {
		return nil, err
	}
	out := make(map[string][]float32, len(hashes))
	if len(hashes) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, qMemoryVecs, model, hashes)
	if err != nil {
		return nil, fmt.Errorf("postgres.MemoryVectors: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := sqlstore.ScanVector(rows, out); err != nil {
			return nil, fmt.Errorf("postgres.MemoryVectors: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres.MemoryVectors: %w", err)
	}
	return out, nil
}

// PutMemoryVectors implements store.MemoryVectorStore.
func (s *Store) PutMemoryVectors(ctx context.Context, model string, vecs map[string][]float32) error {
	if err := s.checkOpen("PutMemoryVectors"); err != nil {
		return err
	}
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for h, v := range vecs {
			b.Queue(s.q.memoryVecPut, model, h, store.EncodeVector(v))
		}
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return fmt.Errorf("postgres.PutMemoryVectors: %w", err)
	}
	return nil
}
