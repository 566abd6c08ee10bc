package filecheck

import (
	"errors"
	"fmt"
)

// ErrCorrupt is wrapped by every error Check returns for a file whose
// content is not a sound bbolt database: bad meta pages, a truncated file,
// pages of the wrong type, element offsets outside their page, a freelist
// naming impossible pages, unsorted keys, cycles. Such a file must not be
// handed to bbolt; the caller moves it aside and rebuilds.
var ErrCorrupt = errors.New("corrupt bbolt file")

// ErrNotBolt is wrapped by the errors Check returns for a path that does
// not hold a bbolt database at all: no meta page carries bbolt's magic
// number, or the path is a directory or another non-regular file. It wraps
// ErrCorrupt, so errors.Is(err, ErrCorrupt) holds for it too.
var ErrNotBolt error = &kindError{msg: "not a bbolt file", parent: ErrCorrupt}

// kindError is a sentinel that wraps a more general sentinel.
type kindError struct {
	msg    string
	parent error
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.parent }

// noPage marks a CorruptionError that concerns the file as a whole.
const noPage = -1

// CorruptionError describes what is wrong with a file and where. It wraps
// ErrCorrupt or ErrNotBolt; use errors.Is for the category and errors.As
// for the details.
type CorruptionError struct {
	// Path is the file that was checked.
	Path string
	// Page is the id of the page where the problem was found, or -1 when
	// the problem concerns the file as a whole (size, type, meta choice).
	Page int64
	// Reason says what is wrong, in words.
	Reason string

	kind error // ErrCorrupt or ErrNotBolt
}

// Error implements error.
func (e *CorruptionError) Error() string {
	if e.Page == noPage {
		return fmt.Sprintf("filecheck: %s: %s: %v", e.Path, e.Reason, e.kind)
	}
	return fmt.Sprintf("filecheck: %s: page %d: %s: %v", e.Path, e.Page, e.Reason, e.kind)
}

// Unwrap returns ErrCorrupt or ErrNotBolt.
func (e *CorruptionError) Unwrap() error { return e.kind }

// corruptf returns a CorruptionError wrapping ErrCorrupt for page id
// (noPage for the whole file).
func corruptf(path string, page int64, format string, args ...any) error {
	return &CorruptionError{Path: path, Page: page, Reason: fmt.Sprintf(format, args...), kind: ErrCorrupt}
}

// notBoltf returns a CorruptionError wrapping ErrNotBolt.
func notBoltf(path string, format string, args ...any) error {
	return &CorruptionError{Path: path, Page: noPage, Reason: fmt.Sprintf(format, args...), kind: ErrNotBolt}
}
