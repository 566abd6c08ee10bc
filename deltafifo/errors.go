package deltafifo

import "errors"

// Errors returned by the queue. They are wrapped with the operation (and
// the key when there is one); test with errors.Is. Key errors are returned
// as a wrapped cache.KeyError (test with errors.As), and context errors as
// a wrapped ctx.Err() (errors.Is(err, context.Canceled)).
var (
	// ErrClosed is returned by producer methods called after Close (or
	// blocked when Close was called), and by Pop once the queue is closed
	// and drained.
	ErrClosed = errors.New("deltafifo: queue is closed")
	// ErrNilObject is returned when a nil object (or a typed nil pointer)
	// is pushed.
	ErrNilObject = errors.New("deltafifo: nil object")
	// ErrInvalidArgument is returned for invalid Options and arguments
	// (Pop with max < 1, Bookmark with an empty resourceVersion).
	ErrInvalidArgument = errors.New("deltafifo: invalid argument")
	// ErrReplaceInProgress is returned by BeginReplace while a replace is
	// open, and by Add, Update, Delete, Bookmark and MarkSynced, which are
	// not allowed between BeginReplace and EndReplace or AbortReplace.
	ErrReplaceInProgress = errors.New("deltafifo: a replace is in progress")
	// ErrNoReplace is returned by ReplacePage, EndReplace and AbortReplace
	// when no replace is open.
	ErrNoReplace = errors.New("deltafifo: no replace in progress")
)
