package shm

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/narma-rma/narma/internal/sys"
)

// Dir is where the segments live: a tmpfs, so that they are memory.
const Dir = "/dev/shm"

// prefix starts the name of every segment file narma creates.
const prefix = "narma."

// NewJobID returns a fresh job identifier, "<pid>-<16 hex digits>": the
// process id of the job's owner (the process that starts the ranks) and
// random bits, the form of a launcher's job identifiers
// (bootstrap.NewJob). Segment files are named after the job, so that the
// owner can remove them when the job ends and anyone can tell that a
// job's owner is gone (RemoveStale).
func NewJobID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails on Linux
	return fmt.Sprintf("%d-%s", os.Getpid(), hex.EncodeToString(b[:]))
}

// validJob reports whether job looks like an identifier of NewJobID (only
// digits, '-' and hex digits), so that it cannot make a path escape Dir.
func validJob(job string) bool {
	owner, rnd, ok := strings.Cut(job, "-")
	if !ok || owner == "" || rnd == "" {
		return false
	}
	if _, err := strconv.Atoi(owner); err != nil {
		return false
	}
	for _, c := range rnd {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// jobOwner returns the owner's pid of the job that named segment file
// name, or 0 if name is not a narma segment.
func jobOwner(name string) int {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0
	}
	job, _, _ := strings.Cut(rest, ".")
	if !validJob(job) {
		return 0
	}
	owner, _, _ := strings.Cut(job, "-")
	pid, _ := strconv.Atoi(owner)
	return pid
}

// segmentPath returns the path of segment name of job.
func segmentPath(job, name string) string {
	return filepath.Join(Dir, prefix+job+"."+name)
}

// HostJob returns the identifier of the segments of job's ranks on host
// when one machine plays several hosts (network namespaces share
// /dev/shm): job followed by the host's number in 4 hex digits, which
// RemoveJob(job) also removes. Identifiers of NewJobID all have the same
// length, so no job's identifier is a prefix of another's.
func HostJob(job string, host int) string { return fmt.Sprintf("%s%04x", job, host&0xffff) }

// RemoveJob removes every segment file of job. Processes that have them
// mapped keep their mappings; nobody can open them any more. It returns
// the first error other than a file already gone.
func RemoveJob(job string) error {
	if !validJob(job) {
		return fmt.Errorf("shm: %q is not a job identifier", job)
	}
	// The job's own segments, and those of its hosts (HostJob).
	files, err := filepath.Glob(filepath.Join(Dir, prefix+job+"*.*"))
	if err != nil {
		return err
	}
	var first error
	for _, f := range files {
		if err := os.Remove(f); err != nil && !os.IsNotExist(err) && first == nil {
			first = err
		}
	}
	return first
}

// RemoveStale removes the segment files of jobs whose owner process no
// longer exists (a launcher killed with SIGKILL cannot clean up after
// itself), and returns the names of the files removed.
func RemoveStale() ([]string, error) {
	ents, err := os.ReadDir(Dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	var removed []string
	var first error
	for _, e := range ents {
		pid := jobOwner(e.Name())
		if pid == 0 || sys.Alive(pid) {
			continue
		}
		if err := os.Remove(filepath.Join(Dir, e.Name())); err != nil {
			if !os.IsNotExist(err) && first == nil {
				first = err
			}
			continue
		}
		removed = append(removed, e.Name())
	}
	return removed, first
}
