package crcache

import "errors"

// ErrUnsupported is returned by the cache constructor (NewCache's
// function) for cache.Options it cannot serve from persistent informers,
// and by Cache.RemoveInformer. Test with errors.Is.
var ErrUnsupported = errors.New("crcache: unsupported")
