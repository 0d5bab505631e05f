package shm

import (
	"fmt"
	"os"

	"github.com/narma-rma/narma/internal/sys"
)

// pageSize rounds segment sizes.
var pageSize = os.Getpagesize()

// createSegment creates the segment file path (which must not exist) of
// size bytes and maps it, populated (sys.CreateSegment). The memory is
// zero.
func createSegment(path string, size int) ([]byte, error) {
	b, err := sys.CreateSegment(path, size)
	if err != nil {
		return nil, fmt.Errorf("shm: %w", err)
	}
	return b, nil
}

// openSegment maps the existing segment file path, whole.
func openSegment(path string) ([]byte, error) {
	b, err := sys.OpenSegment(path)
	if err != nil {
		return nil, fmt.Errorf("shm: %w", err)
	}
	return b, nil
}
