package sqlite

import (
	"testing"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/storetest"
)

func TestMemoryConformance(t *testing.T) {
	storetest.RunMemory(t, func(t *testing.T) store.MemoryStore { return openTest(t, Options{}) })
}
