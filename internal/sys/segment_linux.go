package sys

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Segments are mapped with MAP_POPULATE, in the process that creates them
// and in every process that opens them: the pages are allocated and
// entered in the page tables at once, rather than at the first touch of
// each page by each process. A first touch costs a page fault, some
// microseconds on bare metal and tens of them under some hypervisors, and
// it falls in the middle of a transfer: rings of active messages, for
// one, touch a fresh page every 4 KiB of messages until they have gone
// round once. Memory a job allocates is memory it means to use.
const segmentFlags = unix.MAP_SHARED | unix.MAP_POPULATE

// CreateSegment creates the file path (which must not exist) with size
// bytes, readable and writable by its owner only, and maps it shared. The
// memory is zero. On failure nothing is left behind.
func CreateSegment(path string, size int) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create segment %s: %w", path, err)
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		unix.Unlink(path)
		return nil, fmt.Errorf("size segment %s to %d bytes: %w", path, size, err)
	}
	b, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, segmentFlags)
	if err != nil {
		unix.Unlink(path)
		return nil, fmt.Errorf("map segment %s: %w", path, err)
	}
	return b, nil
}

// MaxSegment is the largest segment OpenSegment maps (64 TiB).
const MaxSegment = 1 << 46

// OpenSegment maps the existing file path, whole, shared.
func OpenSegment(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open segment %s: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("stat segment %s: %w", path, err)
	}
	if st.Size <= 0 || st.Size > MaxSegment {
		return nil, fmt.Errorf("segment %s has size %d", path, st.Size)
	}
	b, err := unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ|unix.PROT_WRITE, segmentFlags)
	if err != nil {
		return nil, fmt.Errorf("map segment %s: %w", path, err)
	}
	return b, nil
}

// Retire releases the shared memory behind a mapping made by
// CreateSegment or OpenSegment without giving up the address range: fresh
// private zero pages replace the shared ones. A stale slice into the
// mapping (a window used after Free, say) then reads zeros and writes
// into the void instead of faulting, which keeps Go's memory safety; the
// cost is address space, not memory.
func Retire(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	_, err := unix.MmapPtr(-1, 0, unsafe.Pointer(unsafe.SliceData(b)), uintptr(len(b)),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED)
	return err
}
